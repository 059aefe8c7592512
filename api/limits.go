package api

import (
	"runtime"
	"time"
)

// Limits bound what requests and connections may take from the server.
// Beyond a limit a request gets an answer that says so (413, 429 or 503
// with Retry-After) and a connection is refused or closed; nothing grows
// without bound and nothing crashes. cmd/coppice fills them from flags;
// the zero value of a field means its default.
type Limits struct {
	// RequestTimeout is how long a request may take from its arrival,
	// reading its body and waiting for a slot included; past it, its work
	// stops and it gets 503. 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxInflight is how many requests execute at once; 0 means
	// DefaultMaxInflight().
	MaxInflight int
	// MaxInflightHeavy is how many heavy requests (queries, searches,
	// summaries, aggregations, vector searches) execute at once, within
	// MaxInflight; 0 means DefaultMaxInflightHeavy().
	MaxInflightHeavy int
	// MaxBulkDuringReads is how many bulk inserts compute at once while
	// reads are served (see bulkGate); 0 means
	// DefaultMaxBulkDuringReads().
	MaxBulkDuringReads int
	// MaxSyncWaiting is how many writes may wait for their sync without
	// holding an execution slot. A write applied and waiting only for the
	// sync it shares with the writes committed with it needs no CPU: it
	// gives its slot to the next request, so that more writers than
	// MaxInflight form each group and share its sync. Beyond this many, a
	// write keeps its slot while it waits, and the requests after it
	// queue for slots as usual. 0 means DefaultMaxSyncWaiting; negative
	// means none: every write holds its slot to the end.
	MaxSyncWaiting int
	// MaxQueue is how many requests may wait for a slot when all are
	// taken; beyond it they get 503. 0 means DefaultMaxQueue; negative
	// means none wait.
	MaxQueue int
	// MaxQueueWait is how long a request waits for a slot before it gets
	// 503. 0 means DefaultMaxQueueWait.
	MaxQueueWait time.Duration
	// MaxBodyInflight is how many bytes of request bodies the server holds
	// at once; a body that does not fit waits as for a slot, then gets
	// 503. 0 means DefaultMaxBodyInflight; it is raised to the body limit
	// when below it.
	MaxBodyInflight int64
	// ReadHeaderTimeout is how long a connection may take to send the
	// request line and headers of a request, from the connection's start
	// or a request's first byte; then the connection is closed. 0 means
	// DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// IdleTimeout is how long a kept-alive connection may wait for its
	// next request. 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxConns is how many connections are open at once; more are refused
	// with 503. 0 means DefaultMaxConns of the open-file limit.
	MaxConns int
	// MaxConnsPerIP is how many connections one client address (an IPv6
	// /64) may hold open; 0 means no limit.
	MaxConnsPerIP int
	// ShutdownTimeout bounds a server's shutdown: cancelling the requests in
	// flight, closing connections and the data directory. 0 means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// AuthFailLimit is how many failed authentications a client address
	// may make in AuthFailWindow before its requests get 429 for the rest
	// of the window. 0 means DefaultAuthFailLimit; negative means no limit.
	AuthFailLimit int
	// AuthFailWindow is the window of AuthFailLimit; 0 means
	// DefaultAuthFailWindow.
	AuthFailWindow time.Duration
	// MaxLoad bounds the dump a load (POST /dbs/{db}/load) may send; the
	// engine holds it in memory while it applies it, one load at a time.
	// 0 means DefaultMaxLoad; at most MaxMaxLoad.
	MaxLoad int64
}

// Defaults of Limits.
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultMaxQueue       = 256
	// DefaultMaxSyncWaiting lets a thousand clients' writes share their
	// syncs; a waiting write holds its body (within MaxBodyInflight) and
	// a goroutine.
	DefaultMaxSyncWaiting    = 1024
	DefaultMaxQueueWait      = 10 * time.Second
	DefaultMaxBodyInflight   = 256 << 20
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultShutdownTimeout   = 30 * time.Second
	DefaultAuthFailLimit     = 20
	DefaultAuthFailWindow    = time.Minute
	DefaultMaxLoad           = 1 << 30
	// MaxMaxLoad is the largest MaxLoad: a load is one storage batch,
	// which must stay below 4 GiB.
	MaxMaxLoad = 3 << 30
)

// DefaultMaxInflight is the default of Limits.MaxInflight: four requests
// per CPU, and at least 16. A few per core keep the cores busy while some
// wait for storage; a write waiting for its group commit gives its slot
// back (MaxSyncWaiting), so the slots bound the requests computing. More
// would only add memory and contention. The floor lets the legacy SDK's
// ten parallel requests and a few writers run without queueing on a small
// machine.
func DefaultMaxInflight() int { return max(16, 4*runtime.GOMAXPROCS(0)) }

// DefaultMaxInflightHeavy is the default of Limits.MaxInflightHeavy: one
// less than the CPUs, and at least one. A heavy request computes for as
// long as its data or its deadline lets it; were there one per CPU, they
// would take every CPU, and a point get would wait for the scheduler to
// preempt one (tens of milliseconds each time it blocks and wakes). With
// one CPU left, cheap requests always find one. The cost is that heavy
// requests queue on a small machine: on 2 CPUs, one at a time.
func DefaultMaxInflightHeavy() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// DefaultMaxBulkDuringReads is the default of Limits.MaxBulkDuringReads:
// one less than the CPUs, and at least one, so that a read finds a
// processor that no bulk insert holds.
func DefaultMaxBulkDuringReads() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// DefaultMaxConns is the default of Limits.MaxConns for an open-file
// limit: three quarters of it, at most 65,536, at least 16. The rest is
// for the data directory's files and the listener.
func DefaultMaxConns(openFiles uint64) int {
	n := openFiles / 4 * 3
	return int(max(16, min(n, 65536)))
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults(maxBody int) Limits {
	if l.RequestTimeout <= 0 {
		l.RequestTimeout = DefaultRequestTimeout
	}
	if l.MaxInflight <= 0 {
		l.MaxInflight = DefaultMaxInflight()
	}
	if l.MaxInflightHeavy <= 0 {
		l.MaxInflightHeavy = DefaultMaxInflightHeavy()
	}
	l.MaxInflightHeavy = min(l.MaxInflightHeavy, l.MaxInflight)
	if l.MaxBulkDuringReads <= 0 {
		l.MaxBulkDuringReads = DefaultMaxBulkDuringReads()
	}
	switch {
	case l.MaxSyncWaiting == 0:
		l.MaxSyncWaiting = DefaultMaxSyncWaiting
	case l.MaxSyncWaiting < 0:
		l.MaxSyncWaiting = 0
	}
	switch {
	case l.MaxQueue == 0:
		l.MaxQueue = DefaultMaxQueue
	case l.MaxQueue < 0:
		l.MaxQueue = 0
	}
	if l.MaxQueueWait <= 0 {
		l.MaxQueueWait = DefaultMaxQueueWait
	}
	if l.MaxBodyInflight <= 0 {
		l.MaxBodyInflight = DefaultMaxBodyInflight
	}
	l.MaxBodyInflight = max(l.MaxBodyInflight, int64(maxBody))
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns(openFileLimit())
	}
	if l.MaxConnsPerIP < 0 {
		l.MaxConnsPerIP = 0
	}
	if l.ShutdownTimeout <= 0 {
		l.ShutdownTimeout = DefaultShutdownTimeout
	}
	switch {
	case l.AuthFailLimit == 0:
		l.AuthFailLimit = DefaultAuthFailLimit
	case l.AuthFailLimit < 0:
		l.AuthFailLimit = 0
	}
	if l.AuthFailWindow <= 0 {
		l.AuthFailWindow = DefaultAuthFailWindow
	}
	if l.MaxLoad <= 0 {
		l.MaxLoad = DefaultMaxLoad
	}
	l.MaxLoad = min(l.MaxLoad, MaxMaxLoad)
	return l
}
