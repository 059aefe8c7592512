package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
)

// unstartedServer returns a server of a mode that New built and nothing
// started.
func unstartedServer(t *testing.T, compat string) *Server {
	t.Helper()
	eng, err := engine.Open(t.TempDir(), engine.Options{NoSync: true, Meta: MetaKey(compat)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	s, err := New(eng, Options{Compat: compat, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReadyz checks /readyz through the life of a server: 503 before it
// serves, 200 while it serves, 503 once Shutdown has begun; /healthz
// answers 200 throughout.
func TestReadyz(t *testing.T) {
	s := unstartedServer(t, CompatNone)
	h := s.Handler()
	get := func(path string) int {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("GET")
		ctx.Request.SetRequestURI(path)
		h(&ctx)
		return ctx.Response.StatusCode()
	}
	f := func(stage string, ready int) {
		t.Helper()
		if st := get("/readyz"); st != ready {
			t.Errorf("%s: /readyz %d, want %d", stage, st, ready)
		}
		if st := get("/healthz"); st != 200 {
			t.Errorf("%s: /healthz %d", stage, st)
		}
	}
	f("before Serve", 503)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	// Over the network, once the listener answers.
	c := &fasthttp.Client{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, body, err := c.Get(nil, "http://"+ln.Addr().String()+"/readyz")
		if err == nil && st == 200 {
			if string(body) != `{"status":"ready"}` {
				t.Errorf("body %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %d %v", st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f("serving", 200)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-served
	f("after Shutdown", 503)
}

// TestDiskFullDegrades: once the disk under the engine is full, a write
// gets 503 naming the cause, and so does every write after it; reads still
// answer; /healthz and /readyz answer 503 with the reason, and the metrics
// say writes are refused.
func TestDiskFullDegrades(t *testing.T) {
	disk := engine.NewDiskFull()
	dir := t.TempDir()
	m := NewMetrics()
	eng, err := engine.Open(dir, engine.Options{FS: disk.FS(), OnEvent: m.EngineEvent})
	if err != nil {
		t.Fatal(err)
	}
	ts := serveEngine(t, Options{Metrics: m}, eng, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := ServeMetrics(m, ln, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer stop()
	refused := func() float64 {
		t.Helper()
		return series(scrape(t, "http://"+ln.Addr().String()+"/metrics")["coppice_storage_writes_refused"], nil).GetGauge().GetValue()
	}
	ts.createDB("app")
	ts.createTable("app", "t", map[string]any{"name": "n", "type": "int"})
	ts.expect(201, "PUT", "/db/app:main/tables/t/data/a", map[string]any{"n": 1})
	ts.expect(200, "GET", ts.url+"/healthz", nil, withKey(""))
	ts.expect(200, "GET", ts.url+"/readyz", nil, withKey(""))
	if v := refused(); v != 0 {
		t.Errorf("writes refused %v before the disk filled", v)
	}

	disk.Fill()
	for i, id := range []string{"b", "c"} {
		r := ts.expect(503, "PUT", "/db/app:main/tables/t/data/"+id, map[string]any{"n": 2})
		if msg, _ := r.obj()["message"].(string); !strings.Contains(msg, "no space left on device") {
			t.Errorf("write %d on a full disk: %s", i, r.raw)
		}
	}
	ts.expect(503, "PUT", "/db/app:main/tables/u", nil)
	if r := ts.expect(200, "GET", "/db/app:main/tables/t/data/a", nil); r.obj()["n"] != json.Number("1") {
		t.Errorf("read on a full disk: %s", r.raw)
	}
	ts.expect(200, "POST", "/db/app:main/tables/t/query", map[string]any{})
	for _, path := range []string{"/healthz", "/readyz"} {
		r := ts.expect(503, "GET", ts.url+path, nil, withKey(""))
		if r.obj()["status"] != "degraded" || !strings.Contains(r.obj()["message"].(string), "no space left on device") {
			t.Errorf("%s on a full disk: %s", path, r.raw)
		}
	}
	if v := refused(); v != 1 {
		t.Errorf("writes refused %v on a full disk", v)
	}
}
