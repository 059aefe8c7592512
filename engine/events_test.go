package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/memstore"
)

// eventLog collects the events of an engine and its log lines.
type eventLog struct {
	mu     sync.Mutex
	events []Event
	log    bytes.Buffer
}

func (l *eventLog) onEvent(ev Event) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

// Write receives the log's lines.
func (l *eventLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.log.Write(p)
}

// of returns the events of kind k.
func (l *eventLog) of(k EventKind) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, ev := range l.events {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// TestEventsAndBackgroundFailures checks that store builds and flattens
// report events, and that a background build that fails is logged and
// reported instead of dropped.
func TestEventsAndBackgroundFailures(t *testing.T) {
	l := &eventLog{}
	db := openTestDB(t, Options{FlattenDepth: 2, BackgroundBuildRows: 2, OnEvent: l.onEvent,
		Logger: slog.New(slog.NewTextHandler(l, nil))})
	e := db.e
	tn := testTables[0]
	for i := range 3 {
		if _, err := e.WriteOne(db.ref("main"), Op{Kind: OpInsert, Table: tn, ID: fmt.Sprintf("r%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// A small table builds its store before answering.
	d, b, tb, err := e.resolveTable(db.ref("main"), tn)
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.Open(ctx, b.Name, tb.Name, memstore.Need{Store: memstore.Required})
	if err != nil {
		t.Fatal(err)
	}
	v.Release()
	if evs := l.of(EventStoreBuild); len(evs) != 1 || evs[0].Err != nil || evs[0].Duration <= 0 {
		t.Errorf("store build events %+v, want one that succeeded", evs)
	}

	// Forks deeper than FlattenDepth flatten in the background.
	prev := "main"
	for i := range 3 {
		next := fmt.Sprintf("b%d", i)
		if err := e.Branches().Create(db.ref(next), CreateBranchRequest{From: prev}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.WriteOne(db.ref(next), Op{Kind: OpInsert, Table: tn, ID: next}); err != nil {
			t.Fatal(err)
		}
		prev = next
	}
	e.bg.Wait()
	if evs := l.of(EventFlatten); len(evs) == 0 || evs[0].Err != nil {
		t.Errorf("flatten events %+v, want some that succeeded", evs)
	}

	// A record that cannot be decoded fails the background build of a
	// branch's store: the failure is logged and reported.
	d, b, tb, err = e.resolveTable(db.ref(prev), tn)
	if err != nil {
		t.Fatal(err)
	}
	bad := codec.RecordKey(nil, d.ID, b.Lineage[0].Layer, tb.ID, 1)
	if err := e.pdb.Set(bad, []byte{0xFF, 0xFF}, nil); err != nil {
		t.Fatal(err)
	}
	v, err = d.Open(ctx, b.Name, tb.Name, memstore.Need{})
	if err != nil || v.Store != nil {
		t.Fatalf("store %v, %v: want a background build", v != nil && v.Store != nil, err)
	}
	v.Release()
	e.bg.Wait()
	failed := 0
	for _, ev := range l.of(EventStoreBuild) {
		if ev.Err != nil {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d failed store builds reported, want 1", failed)
	}
	if logged := l.log.String(); !strings.Contains(logged, "background work failed") || !strings.Contains(logged, "store_build") {
		t.Errorf("the failure is not logged:\n%s", logged)
	}
}

// TestCancelledWorkIsNotAFailure: background work cancelled (a store
// build stopped by Close) is logged at debug level, not as a failure,
// and still reported; a real failure is logged as one.
func TestCancelledWorkIsNotAFailure(t *testing.T) {
	var logged strings.Builder
	var events []Event
	o := &observer{log: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelInfo})),
		onEvent: func(ev Event) { events = append(events, ev) }}
	o.event(Event{Kind: EventStoreBuild, Err: fmt.Errorf("build: %w", context.Canceled)})
	if logged.Len() != 0 {
		t.Errorf("a cancelled build logged at info or above:\n%s", logged.String())
	}
	o.event(Event{Kind: EventStoreBuild, Err: errors.New("corrupt record")})
	if !strings.Contains(logged.String(), "level=ERROR") || !strings.Contains(logged.String(), "corrupt record") {
		t.Errorf("a failed build is not logged as an error:\n%s", logged.String())
	}
	if len(events) != 2 {
		t.Errorf("%d events reported, want 2", len(events))
	}
}

// TestStorageLogReachesLogger checks that the storage engine's own log
// lines go to Options.Logger, at debug level, marked as the storage's: an
// engine reopened over the write-ahead log it left tells what it found
// and what it replayed.
func TestStorageLogReachesLogger(t *testing.T) {
	dir := t.TempDir()
	open := func(level slog.Level) (*Engine, *eventLog) {
		t.Helper()
		l := &eventLog{}
		e, err := Open(dir, Options{Logger: slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: level}))})
		if err != nil {
			t.Fatal(err)
		}
		return e, l
	}
	e, _ := open(slog.LevelDebug)
	if _, err := e.CreateDatabase(CreateDatabaseRequest{Name: "app", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, l := open(slog.LevelDebug)
	e.Close()
	var found, replayed bool
	for line := range strings.Lines(l.log.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if rec["component"] != "storage" || rec["level"] != "DEBUG" {
			continue
		}
		msg, _ := rec["msg"].(string)
		found = found || strings.HasPrefix(msg, "Found 1 WALs")
		replayed = replayed || strings.Contains(msg, "replayed")
	}
	if !found || !replayed {
		t.Errorf("no storage lines of the WAL found (%v) and replayed (%v) in the log:\n%s", found, replayed, l.log.String())
	}

	// They are routine: above debug level the log holds none.
	e, l = open(slog.LevelInfo)
	e.Close()
	if strings.Contains(l.log.String(), `"component":"storage"`) {
		t.Errorf("storage lines above debug level:\n%s", l.log.String())
	}
}
