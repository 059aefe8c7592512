package api

import (
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coppice-db/coppice/engine"
)

// countingListener counts the Write calls on the connections it accepts.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

// Accept wraps the accepted connection so that its writes are counted.
func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: &l.writes}, nil
}

// countingConn counts its Write calls, when they start: by the time a
// client holds a whole response, every write of it is counted.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

// Write counts the call and writes b.
func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestPageLeavesInOneWrite holds that a default page of twenty records of
// a few hundred words each reaches the socket in one write system call,
// headers and body together: on loopback a write costs as much as
// encoding the page, and a second one wakes the client twice.
func TestPageLeavesInOneWrite(t *testing.T) {
	dir := t.TempDir()
	eng, err := engine.Open(dir, engine.Options{NoSync: true, Meta: MetaKey(CompatNone)})
	if err != nil {
		t.Fatal(err)
	}
	var ln *countingListener
	ts := serveEngineOn(t, Options{}, eng, dir, func(l net.Listener) net.Listener {
		ln = &countingListener{Listener: l}
		return ln
	})
	ts.createDB("w")
	ts.createTable("w", "docs", map[string]any{"name": "body", "type": "text"})
	var recs []any
	for i := range 20 {
		words := make([]string, 150)
		for k := range words {
			words[k] = "word" + strconv.Itoa((i*31+k*7)%97)
		}
		recs = append(recs, map[string]any{"body": strings.Join(words, " ")})
	}
	ts.expect(200, "POST", "/db/w:main/tables/docs/bulk", map[string]any{"records": recs})
	query := map[string]any{"page": map[string]any{"size": 20}}
	for _, pass := range []string{"cold", "cached"} {
		before := ln.writes.Load()
		r := ts.expect(200, "POST", "/db/w:main/tables/docs/query", query)
		writes := ln.writes.Load() - before
		if n := len(r.obj()["records"].([]any)); n != 20 {
			t.Fatalf("%s: %d records, want 20", pass, n)
		}
		if len(r.raw) < 16<<10 || len(r.raw) > responseWriteBuffer-1<<10 {
			t.Fatalf("%s: a page of %d bytes: the test wants one between 16 KiB and the write buffer", pass, len(r.raw))
		}
		if writes != 1 {
			t.Errorf("%s: a page of %d bytes took %d writes, want 1", pass, len(r.raw), writes)
		}
	}
}
