package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
)

// Admission: before its handler runs, a request reads its body within the
// server's budget of body bytes, then takes one of the slots of requests
// executing at once; a heavy request (heavyRequest) first takes one of the
// fewer heavy slots. All of them wait in one bounded queue for a bounded
// time when they are all taken, and answer 503 with Retry-After beyond
// that. The body comes first so that a slow upload holds no slot, and the
// heavy slot before the shared one so that heavy requests waiting for
// their turn hold none of the slots cheap requests need. Health checks are
// exempt.

// queue bounds the requests waiting for slots or body bytes: how many and
// for how long.
type queue struct {
	waiting  atomic.Int64
	maxQueue int64
	maxWait  time.Duration
}

// slots is a cap on requests executing at once, waiting in a queue.
type slots struct {
	free chan struct{} // one token per slot
	q    *queue
}

// newSlots returns n slots waiting in q.
func newSlots(n int, q *queue) *slots {
	s := &slots{free: make(chan struct{}, n), q: q}
	for range n {
		s.free <- struct{}{}
	}
	return s
}

// errBusy is the answer to a request the queue has no room or time for.
var errBusy = &retryLater{"the server is busy: too many requests at once; retry in a moment"}

// tryAcquire takes a free slot, if there is one.
func (s *slots) tryAcquire() bool {
	select {
	case <-s.free:
		return true
	default:
		return false
	}
}

// acquire takes a slot, waiting in the queue when none is free. It fails
// with errBusy when the queue is full or the wait too long, or with the
// cause of ctx's end.
func (s *slots) acquire(ctx context.Context) error {
	if s.tryAcquire() {
		return nil
	}
	if !s.q.enqueue() {
		return errBusy
	}
	defer s.q.waiting.Add(-1)
	t := time.NewTimer(s.q.maxWait)
	defer t.Stop()
	select {
	case <-s.free:
		return nil
	case <-t.C:
		return errBusy
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// enqueue counts a request into the queue when there is room.
func (q *queue) enqueue() bool {
	if q.waiting.Add(1) > q.maxQueue {
		q.waiting.Add(-1)
		return false
	}
	return true
}

// release gives a slot back.
func (s *slots) release() { s.free <- struct{}{} }

// bodyBudget is the cap on bytes of request bodies held at once: a
// weighted semaphore whose waiters are served in arrival order and share
// the slots' queue.
type bodyBudget struct {
	q     *queue
	limit int64

	mu      sync.Mutex
	used    int64
	waiters []*bodyWaiter
}

// bodyWaiter is a request waiting for n bytes; ready is closed when they
// are its.
type bodyWaiter struct {
	n     int64
	ready chan struct{}
}

// acquire reserves n bytes (at most the limit), waiting in the queue when
// they do not fit; it fails as slots.acquire does. Only a request that
// waits needs its context.
func (b *bodyBudget) acquire(r *request, n int64) error {
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.limit {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	if !b.q.enqueue() {
		b.mu.Unlock()
		return errBusy
	}
	defer b.q.waiting.Add(-1)
	w := &bodyWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	ctx := r.context()
	t := time.NewTimer(b.q.maxWait)
	defer t.Stop()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-t.C:
		err = errBusy
	case <-ctx.Done():
		err = r.contextError(context.Cause(ctx))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready:
		// Granted while giving up: hand the bytes on.
		b.used -= n
	default:
		for i, x := range b.waiters {
			if x == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
	}
	b.grant()
	return err
}

// release returns n bytes.
func (b *bodyBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.grant()
	b.mu.Unlock()
}

// grant hands bytes to the waiters in order while the first one fits.
// Called with mu held.
func (b *bodyBudget) grant() {
	for len(b.waiters) > 0 && b.used+b.waiters[0].n <= b.limit {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
}

// prefetchedBody is how much of a body fasthttp reads with the headers,
// into its own pooled buffer: a body this small is taken from there.
const prefetchedBody = 8 << 10

// admit reads the request's body, unless its handler streams it, and takes
// an execution slot, and a heavy slot first when heavy, or a bulk
// request's turn (bulkGate) when bulk, or answers the request itself and
// returns false. A read (a GET or a heavy request) is counted as one from
// then on. release gives back what admit took.
func (s *Server) admit(r *request, streamBody, heavy, bulk bool) bool {
	ctx := r.ctx
	if streamBody {
		// Whatever its handler leaves of the body (an answer before it
		// reads it, from authentication on) would be read as the next
		// request: the connection serves this one only.
		ctx.SetConnectionClose()
		markUnreadBody(ctx.Conn())
	}
	if hasBody(ctx) && !streamBody {
		if err := s.readBody(r, ctx.Request.Header.ContentLength()); err != nil {
			// What is left of the body would be read as the next request.
			ctx.SetConnectionClose()
			markUnreadBody(ctx.Conn())
			if cause := r.cause(); cause != nil {
				err = cause // why the read was cut short
			}
			s.writeError(ctx, r.requestID(), err)
			return false
		}
	}
	if heavy {
		if !s.heavy.tryAcquire() {
			if err := s.heavy.acquire(r.context()); err != nil {
				s.writeError(ctx, r.requestID(), r.contextError(err))
				return false
			}
		}
		r.heavySlot = true
	}
	if bulk {
		if err := s.bulk.acquire(r.context()); err != nil {
			s.writeError(ctx, r.requestID(), r.contextError(err))
			return false
		}
		r.bulkTurn = true
	}
	if !s.slots.tryAcquire() {
		if err := s.slots.acquire(r.context()); err != nil {
			s.writeError(ctx, r.requestID(), r.contextError(err))
			return false
		}
	}
	r.slot = true
	if heavy || ctx.IsGet() {
		s.bulk.readBegins()
		r.reading = true
	}
	return true
}

// heavyRequest reports whether a request is a read whose cost grows with
// the data it reads, bounded only by its deadline: a query, search,
// summary, aggregation or vector search (the POST routes ending in those
// names). It looks at the path alone, before routing; a record whose id is
// one of those names, upserted by POST, counts as heavy too, which only
// makes it wait for a heavy slot. Bulk inserts and transactions are not
// heavy: their work is bounded by their body (--max-body, and the body
// budget for all at once), and most of their time is the wait for the
// group-committed sync, which needs no CPU; a cap of one would also
// commit them one sync at a time.
func heavyRequest(method, path string) bool {
	if method != "POST" {
		return false
	}
	switch path[strings.LastIndexByte(path, '/')+1:] {
	case "query", "search", "summarize", "aggregate", "vectorSearch":
		return true
	}
	return false
}

// hasBody reports whether a request comes with a body: a positive
// Content-Length, or chunked (-1). Without either a request has none (a
// GET reports -2).
func hasBody(ctx *fasthttp.RequestCtx) bool {
	n := ctx.Request.Header.ContentLength()
	return n > 0 || n == -1
}

// counter is a cap on a count of things without a queue: what does not
// fit goes on without one.
type counter struct {
	n     atomic.Int64
	limit int64
}

// tryAdd counts one more thing, if there is room.
func (c *counter) tryAdd() bool {
	if c.n.Add(1) > c.limit {
		c.n.Add(-1)
		return false
	}
	return true
}

// done counts one thing less.
func (c *counter) done() { c.n.Add(-1) }

// writeContext returns the context of a write of r's made with base: once
// the write waits to be committed with the others of its database, which
// the writer holding the database's lock applies one group at a time, r
// gives its execution slot to the next request when there is room among
// the writes waiting so (Limits.MaxSyncWaiting). The writers waiting then
// join one group and share its sync, however many they are; what is left
// of r once answered, writing its response, is cheap.
func (s *Server) writeContext(r *request, base context.Context) context.Context {
	return engine.OnGroupWait(base, func() {
		if r.slot && !r.syncWaiting && s.syncWaiting.tryAdd() {
			r.slot, r.syncWaiting = false, true
			s.slots.release()
		}
	})
}

// release gives back a request's slots and body bytes.
func (s *Server) release(r *request) {
	if r.slot {
		s.slots.release()
	}
	if r.syncWaiting {
		s.syncWaiting.done()
	}
	if r.heavySlot {
		s.heavy.release()
	}
	if r.bulkTurn {
		s.bulk.release()
	}
	if r.reading {
		s.bulk.readEnds()
	}
	if r.bodyBytes > 0 {
		s.bodies.release(r.bodyBytes)
	}
}

// errBodyTooLarge is the answer to a body over Options.MaxBody.
func (s *Server) errBodyTooLarge() error {
	return &statusError{http.StatusRequestEntityTooLarge, "request body exceeds the limit of " + strconv.Itoa(s.opts.MaxBody) + " bytes"}
}

// readBody reads a body of n bytes (-1: chunked) within the body budget
// into a buffer of its size, the only copy the server makes of it before
// decoding.
func (s *Server) readBody(r *request, n int) error {
	ctx := r.ctx
	if n > s.opts.MaxBody {
		return s.errBodyTooLarge()
	}
	if n >= 0 && n <= prefetchedBody {
		r.bodyBytes = int64(n)
		if err := s.bodies.acquire(r, r.bodyBytes); err != nil {
			r.bodyBytes = 0
			return err
		}
		ctx.PostBody() // moves the prefetched body out of the stream
		return nil
	}
	want := int64(n)
	if n < 0 {
		want = int64(s.opts.MaxBody)
	}
	if err := s.bodies.acquire(r, want); err != nil {
		return err
	}
	r.bodyBytes = want
	stream := ctx.RequestBodyStream()
	if stream == nil {
		return nil
	}
	// A request that ends (its deadline, its client gone, shutdown) stops
	// waiting for the rest of its body. Should the end race with the last
	// bytes, the connection takes no further request: its read deadline
	// may be cut short at any moment.
	conn := ctx.Conn()
	stopCut := context.AfterFunc(r.context(), func() { _ = conn.SetReadDeadline(time.Now()) })
	defer func() {
		if !stopCut() {
			ctx.SetConnectionClose()
			markUnreadBody(conn)
		}
	}()
	var body []byte
	var err error
	if n >= 0 {
		body = make([]byte, n)
		_, err = io.ReadFull(stream, body)
	} else {
		var buf bytes.Buffer
		_, err = buf.ReadFrom(io.LimitReader(stream, int64(s.opts.MaxBody)+1))
		body = buf.Bytes()
		if err == nil && len(body) > s.opts.MaxBody {
			return s.errBodyTooLarge()
		}
		// Keep only what the body holds of the reservation.
		s.bodies.release(want - int64(len(body)))
		r.bodyBytes = int64(len(body))
	}
	if err != nil {
		return bodyReadError(err)
	}
	ctx.Request.SetBodyRaw(body)
	return nil
}

// bodyReadError is the answer to a body that could not be read: too slow,
// cut off, or malformed (chunked encoding).
func bodyReadError(err error) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return &statusError{http.StatusRequestTimeout, "request body not received in time"}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return &statusError{http.StatusBadRequest, "request body ended before its announced length"}
	}
	return &statusError{http.StatusBadRequest, fmt.Sprintf("request body could not be read (%s)", safeErrorText(err))}
}

// Bulk requests while reads are served. A bulk insert (what coppice
// import sends) computes for a long while without blocking: decoding a
// thousand records, converting their values and tokenizing their text,
// then staging them under the database's writer lock. Were there one per
// CPU, no processor would be left: a read arriving then is not even
// noticed before the runtime's monitor polls the network (every 10 ms),
// and then waits for a processor. So while reads are served, bulk
// requests compute on at most Limits.MaxBulkDuringReads processors, one
// less than the CPUs by default: the others wait for a turn, and one that
// computes when reads begin gives its turn back between records. A read
// is a GET or a heavy request (heavyRequest); reads are served while one
// executes and for readsLinger after the last one ended, so that the gaps
// between a client's reads do not let the bulk requests back in. Without
// reads, bulk requests are bounded by the execution slots only, and a
// load keeps every processor.

// readsLinger is how long after the last read ended reads still count as
// being served.
const readsLinger = time.Second

// bulkGate gives bulk requests their turns to compute.
type bulkGate struct {
	limit    int          // turns while reads are served
	reads    atomic.Int64 // reads executing
	lastRead atomic.Int64 // when the last read ended, Unix nanoseconds

	mu      sync.Mutex
	running int           // turns taken
	freed   chan struct{} // closed, and replaced, when a turn is given back

	// poll makes a bulk insert's processor poll the network between its
	// records while reads are served; nudged is when one last did, Unix
	// nanoseconds.
	poll   pollNudge
	nudged atomic.Int64
}

// newBulkGate returns a gate of limit turns while reads are served.
func newBulkGate(limit int) *bulkGate {
	return &bulkGate{limit: limit, freed: make(chan struct{})}
}

// turns is how many bulk requests may compute at once now.
func (g *bulkGate) turns() int {
	if g.serving() {
		return g.limit
	}
	return math.MaxInt
}

// serving reports whether reads are served: one executes or ended less
// than readsLinger ago.
func (g *bulkGate) serving() bool {
	return g.reads.Load() > 0 || time.Now().UnixNano()-g.lastRead.Load() < int64(readsLinger)
}

// nudgeEvery is how often bulk inserts make the network be polled while
// reads are served: a read arriving waits about this long at most for
// its processor to notice it.
const nudgeEvery = 500 * time.Microsecond

// nudge makes the network be polled (pollNudge) when reads are served
// and no bulk insert did for nudgeEvery.
func (g *bulkGate) nudge() {
	if !g.serving() {
		return
	}
	now := time.Now().UnixNano()
	if last := g.nudged.Load(); now-last < int64(nudgeEvery) || !g.nudged.CompareAndSwap(last, now) {
		return
	}
	g.poll.nudge()
}

// acquire takes a turn, waiting for one as long as ctx lasts.
func (g *bulkGate) acquire(ctx context.Context) error {
	for {
		g.mu.Lock()
		if g.running < g.turns() {
			g.running++
			g.mu.Unlock()
			return nil
		}
		freed := g.freed
		g.mu.Unlock()
		// Reads ending free turns without a word: look again once the
		// last one may have lingered out.
		t := time.NewTimer(readsLinger)
		select {
		case <-freed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		}
		t.Stop()
	}
}

// release gives a turn back.
func (g *bulkGate) release() {
	g.mu.Lock()
	g.running--
	close(g.freed)
	g.freed = make(chan struct{})
	g.mu.Unlock()
}

// over reports whether more bulk requests compute than may now.
func (g *bulkGate) over() bool {
	if !g.serving() {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running > g.turns()
}

// readBegins and readEnds count a read executing.
func (g *bulkGate) readBegins() { g.reads.Add(1) }
func (g *bulkGate) readEnds() {
	g.lastRead.Store(time.Now().UnixNano())
	g.reads.Add(-1)
}

// bulkRequest reports whether a request is a bulk insert (POST …/bulk).
func bulkRequest(method, path string) bool {
	return method == "POST" && strings.HasSuffix(path, "/bulk")
}

// bulkYield is called by a bulk request between records: when reads began
// meanwhile and more bulk requests compute than they allow, it gives its
// turn back and waits for the next. It fails when the request ends while
// it waits, and then holds no turn.
func (s *Server) bulkYield(r *request) error {
	s.bulk.nudge()
	if !r.bulkTurn || !s.bulk.over() {
		return nil
	}
	s.bulk.release()
	r.bulkTurn = false
	if err := s.bulk.acquire(r.context()); err != nil {
		return err
	}
	r.bulkTurn = true
	return nil
}
