package api

import (
	"os"
	"runtime"
	"sync"
	"time"
)

// A busy server notices a request's arrival late. The Go scheduler polls
// the network when a processor finds no goroutine to run, and otherwise
// only when its monitor sees that nobody polled for 10 ms. A bulk insert
// computing on one processor while a compaction or the collector holds
// the other leaves none idle: a read arriving then waits up to 10 ms before
// anything looks at it, and yielding (runtime.Gosched) does not help, as
// the scheduler looks at its run queues before the network.
//
// pollNudge makes a processor poll. It writes a byte into a pipe whose
// reading end a goroutine of its own waits on through the poller, and
// parks the caller until that goroutine wakes: the caller's processor,
// finding its queues empty, polls the network, which hands it the pipe's
// reader and every request that arrived meanwhile; the caller then yields
// to them. It costs two system calls and a few switches, a few
// microseconds; a bulk insert nudges only while reads are served.

// nudgeWait bounds how long a nudge parks its caller when its processor
// has other goroutines to run first.
const nudgeWait = 100 * time.Microsecond

// pollNudge is the pipe and its reader; the zero value opens them on first
// use.
type pollNudge struct {
	once   sync.Once
	w      *os.File // nil: the pipe could not be made, nudges only yield
	woke   chan struct{}
	mu     sync.Mutex
	closed bool
}

// nudge makes the caller's processor poll the network, then yields.
func (p *pollNudge) nudge() {
	p.once.Do(p.open)
	if p.w != nil {
		p.mu.Lock()
		ok := !p.closed
		if ok {
			_, err := p.w.Write([]byte{0})
			ok = err == nil
		}
		p.mu.Unlock()
		if ok {
			t := time.NewTimer(nudgeWait)
			select {
			case <-p.woke:
			case <-t.C:
			}
			t.Stop()
		}
	}
	runtime.Gosched() // what the poll found runs first
}

// open makes the pipe and starts its reader.
func (p *pollNudge) open() {
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	p.w, p.woke = w, make(chan struct{}, 1)
	go func() {
		defer r.Close()
		buf := make([]byte, 64)
		for {
			if _, err := r.Read(buf); err != nil {
				return // closed
			}
			select {
			case p.woke <- struct{}{}:
			default:
			}
		}
	}()
}

// close stops the reader.
func (p *pollNudge) close() {
	p.once.Do(func() {}) // no pipe after this
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && p.w != nil {
		p.w.Close()
	}
	p.closed = true
}
