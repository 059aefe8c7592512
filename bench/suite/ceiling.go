package main

import (
	"fmt"
	"net"
	"os"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/codec"
)

// trivial is a fasthttp server that answers every request with a fixed
// body: the ceiling of the HTTP layer under the suite's load tool.
type trivial struct {
	srv    *fasthttp.Server
	ln     net.Listener
	client *fasthttp.HostClient
	done   chan error
}

// startTrivial serves body on a free loopback port.
func startTrivial(body []byte) (*trivial, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	body = slices.Clone(body)
	t := &trivial{
		ln: ln,
		srv: &fasthttp.Server{
			Handler: func(ctx *fasthttp.RequestCtx) {
				ctx.SetContentType("application/json")
				ctx.SetBody(body)
			},
		},
		client: &fasthttp.HostClient{Addr: ln.Addr().String(), MaxConns: 256, ReadTimeout: time.Minute},
		done:   make(chan error, 1),
	}
	go func() { t.done <- t.srv.Serve(ln) }()
	return t, nil
}

// close stops the server.
func (t *trivial) close() {
	t.client.CloseIdleConnections()
	t.srv.Shutdown()
	<-t.done
}

// pebbleCeiling writes n docs as the engine stores them (the encoded
// record under its record key, and its id-map entry) in synced Pebble
// batches of batchSize, and returns one latency per batch with docs as
// units. No index is written: this is the ceiling of the storage layer.
func (s *suite) pebbleCeiling(dir string, n int) (series, error) {
	db, err := pebble.Open(dir, &pebble.Options{MemTableSize: 64 << 20, Logger: quietLogger{}})
	if err != nil {
		return series{}, err
	}
	defer os.RemoveAll(dir)
	defer db.Close()
	// Encode everything first: only the commits are timed.
	type enc struct{ keys, vals [][]byte }
	var encoded []enc
	row := uint32(0)
	for lines := range s.ds.lineBatches(n, false, nil) {
		var e enc
		for _, line := range lines {
			doc, err := decodeDoc(line)
			if err != nil {
				return series{}, err
			}
			now := time.Now().UnixNano()
			rec := &codec.Record{ID: doc["id"].(string), CreatedAt: now, UpdatedAt: now}
			for col, name := range docColumns[1:] {
				rec.Set(uint32(col+1), codecValue(doc[name]))
			}
			e.keys = append(e.keys, codec.RecordKey(nil, 1, 1, 1, row), codec.IDMapKey(nil, 1, 1, 1, rec.ID))
			e.vals = append(e.vals, codec.AppendRecord(nil, rec), codec.AppendU64(nil, uint64(row)))
			row++
		}
		encoded = append(encoded, e)
	}
	var out series
	start := time.Now()
	for _, e := range encoded {
		t0 := time.Now()
		b := db.NewBatch()
		for i := range e.keys {
			b.Set(e.keys[i], e.vals[i], nil)
		}
		if err := b.Commit(pebble.Sync); err != nil {
			return out, err
		}
		b.Close()
		out.lat = append(out.lat, time.Since(t0))
		out.units += len(e.keys) / 2
	}
	out.elapsed = time.Since(start)
	return out, nil
}

// codecValue converts a generated value to the stored form, near enough
// for its size.
func codecValue(v any) codec.Value {
	switch x := v.(type) {
	case bool:
		return codec.Bool(x)
	case []any:
		s := make([]string, len(x))
		for i, e := range x {
			s[i] = e.(string)
		}
		return codec.Strings(s)
	case string:
		if t, err := time.Parse(time.RFC3339, x); err == nil {
			return codec.Datetime(t)
		}
		return codec.String(x)
	case fmt.Stringer: // json.Number
		var f float64
		fmt.Sscan(x.String(), &f)
		return codec.Float(f)
	}
	return codec.Null()
}

// scanCeiling runs the W4 query over plain column arrays in memory: a
// filter and five aggregates per category, one pass. It is the speed of a
// column scan, against which the engine's summarize is read.
func (s *suite) scanCeiling(reps int) series {
	c := s.ds.scan
	bound := summarizeFilter()["price"].(map[string]any)["$lt"].(float64)
	var out series
	for r := range reps + 1 {
		t0 := time.Now()
		var cnt, views [32]int64
		var psum, pmin [32]float64
		var cmax [32]int64
		for g := range pmin {
			pmin[g] = 1e300
		}
		for i, p := range c.price {
			if p >= bound {
				continue
			}
			g := c.category[i]
			cnt[g]++
			views[g] += c.views[i]
			psum[g] += p
			pmin[g] = min(pmin[g], p)
			cmax[g] = max(cmax[g], c.created[i])
		}
		d := time.Since(t0)
		sink += cnt[0] + views[1] + int64(psum[2]+pmin[3]) + cmax[4]
		if r > 0 {
			out.add(series{lat: []time.Duration{d}, elapsed: d})
		}
	}
	return out
}

// sink keeps the scan's results alive.
var sink int64

// runCeilings measures the storage and scan ceilings.
func (s *suite) runCeilings() error {
	n := min(s.ds.n, 200_000)
	sr, err := s.pebbleCeiling(s.cfg.work+"/pebble-ceiling", n)
	if err != nil {
		return err
	}
	s.rep.add("W1", "bulk insert, everything indexed", sysCeiling, sr.summary("docs/s"),
		fmt.Sprintf("raw Pebble, synced batches of %d encoded records + id entries, no index; %d docs", batchSize, n))
	return nil
}

// quietLogger drops Pebble's informational lines; a fatal error panics.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
