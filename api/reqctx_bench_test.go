package api

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// BenchmarkRequestContext is the cost of a request's context, made and
// released, on a loopback connection: what every request that reaches the
// engine pays before any work. The loop runs inside one served request,
// whose arrival time the deadline counts from.
func BenchmarkRequestContext(b *testing.B) {
	var s Server
	s.opts.Limits.RequestTimeout = 30 * time.Second
	s.initLimits()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	h := &fasthttp.Server{Handler: func(fctx *fasthttp.RequestCtx) {
		r := &request{ctx: fctx, s: &s}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := r.context().Err(); err != nil {
				b.Error(err)
				return
			}
			r.stop()
			r.cctx, r.stop = nil, nil
		}
		b.StopTimer()
	}}
	go h.Serve(ln)
	defer h.Shutdown()
	if _, _, err := fasthttp.Get(nil, "http://"+ln.Addr().String()+"/"); err != nil {
		b.Fatal(err)
	}
}
