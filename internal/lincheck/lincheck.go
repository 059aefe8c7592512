// Package lincheck records the history of a register workload — clients
// writing and reading keys concurrently — and checks that it is
// linearizable, with porcupine: that some order of the operations, each
// taking effect at one instant between its call and its return, explains
// every value read. Tests at any level (a Raft group, the HTTP API, a
// cluster of processes) record into a Recorder and call Check.
//
// An operation ends in one of three ways. Ok: it took effect, and a read
// returned the value given. Failed: it certainly did not take effect (a
// write refused before it reached a log, a read that failed); it is left
// out of the history. Unknown: a write whose outcome the client could not
// learn (a timeout after the write was sent); it may have taken effect at
// any instant after its call, or never, so it stays in the history with no
// return time.
package lincheck

import (
	"fmt"
	"math"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Kind is the kind of an operation.
type Kind uint8

// The operations of the register workload.
const (
	// Write sets a key's value.
	Write Kind = iota + 1
	// Read returns a key's value, "" for a key never written.
	Read
)

// Input is what an operation asked for.
type Input struct {
	Kind  Kind
	Key   string
	Value string // for a Write
}

// Output is what a read returned; writes return nothing.
type Output struct {
	Value string
}

// Model is the sequential specification: a map of registers, each starting
// at "", partitioned by key so the check runs key by key.
var Model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(Input).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(Input)
		switch in.Kind {
		case Write:
			return true, in.Value
		case Read:
			out, ok := output.(Output)
			return ok && out.Value == state.(string), state
		}
		return false, state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(Input)
		if in.Kind == Write {
			return fmt.Sprintf("write(%s, %q)", in.Key, in.Value)
		}
		out, _ := output.(Output)
		return fmt.Sprintf("read(%s) → %q", in.Key, out.Value)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%q", state) },
}

// Recorder collects operations from concurrent clients. It is safe for
// concurrent use.
type Recorder struct {
	start time.Time

	mu     sync.Mutex
	ops    []porcupine.Operation
	counts Counts
}

// Counts summarizes a history, for a test's log line.
type Counts struct {
	WritesOk, WritesUnknown, WritesFailed int
	ReadsOk, ReadsFailed                  int
}

// String gives the counts on one line.
func (c Counts) String() string {
	return fmt.Sprintf("writes: %d ok, %d unknown, %d failed; reads: %d ok, %d failed",
		c.WritesOk, c.WritesUnknown, c.WritesFailed, c.ReadsOk, c.ReadsFailed)
}

// NewRecorder returns an empty recorder whose clock starts now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// now is the recorder's monotonic clock in nanoseconds.
func (r *Recorder) now() int64 { return int64(time.Since(r.start)) }

// Op is an operation in progress; end it with exactly one of Ok, Failed or
// Unknown.
type Op struct {
	r      *Recorder
	client int
	in     Input
	call   int64
}

// Write starts a write by client (a small integer, one per goroutine).
func (r *Recorder) Write(client int, key, value string) *Op {
	return &Op{r: r, client: client, in: Input{Kind: Write, Key: key, Value: value}, call: r.now()}
}

// Read starts a read by client.
func (r *Recorder) Read(client int, key string) *Op {
	return &Op{r: r, client: client, in: Input{Kind: Read, Key: key}, call: r.now()}
}

// Ok ends the operation as done; value is what a read returned (ignored for
// a write).
func (o *Op) Ok(value string) {
	ret := o.r.now()
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	var out any
	if o.in.Kind == Read {
		out = Output{Value: value}
		o.r.counts.ReadsOk++
	} else {
		o.r.counts.WritesOk++
	}
	o.r.ops = append(o.r.ops, porcupine.Operation{ClientId: o.client, Input: o.in, Call: o.call, Output: out, Return: ret})
}

// Failed ends an operation that certainly took no effect.
func (o *Op) Failed() {
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	if o.in.Kind == Read {
		o.r.counts.ReadsFailed++
	} else {
		o.r.counts.WritesFailed++
	}
}

// Unknown ends a write whose outcome is unknown: it stays in the history as
// pending forever. A read is never unknown; Unknown on one counts it failed.
func (o *Op) Unknown() {
	if o.in.Kind == Read {
		o.Failed()
		return
	}
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	o.r.counts.WritesUnknown++
	o.r.ops = append(o.r.ops, porcupine.Operation{ClientId: o.client, Input: o.in, Call: o.call, Return: math.MaxInt64})
}

// Counts returns the counts so far.
func (r *Recorder) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// History returns a copy of the operations recorded so far.
func (r *Recorder) History() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]porcupine.Operation(nil), r.ops...)
}

// Check checks the history against Model, giving up after timeout (0: no
// limit) with porcupine.Unknown. When the result is porcupine.Illegal and
// vizPath is not empty, it writes porcupine's HTML visualization there.
func (r *Recorder) Check(timeout time.Duration, vizPath string) porcupine.CheckResult {
	res, info := porcupine.CheckOperationsVerbose(Model, r.History(), timeout)
	if res == porcupine.Illegal && vizPath != "" {
		if f, err := os.Create(vizPath); err == nil {
			porcupine.Visualize(Model, info, f)
			f.Close()
		}
	}
	return res
}
