package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/coppice-db/coppice/api"
)

// limitFlags declares the flags of the server's limits (api.Limits), each
// defaulting to its environment variable, else to the built-in default.
// The returned function parses them once the flags are parsed, given the
// body limit.
func limitFlags(fs *flag.FlagSet, env func(name, def string) string) func(maxBody int) (api.Limits, error) {
	str := func(name, envName, def, usage string) *string {
		v := new(string)
		fs.StringVar(v, name, env(envName, def), usage+" (env "+envName+")")
		return v
	}
	reqTimeout := str("request-timeout", "COPPICE_REQUEST_TIMEOUT", api.DefaultRequestTimeout.String(),
		"time a request may take from its arrival; its work then stops and it gets 503")
	inflight := str("max-inflight", "COPPICE_MAX_INFLIGHT", strconv.Itoa(api.DefaultMaxInflight()),
		"requests executing at once (default: 4 per CPU, at least 16)")
	heavy := str("max-inflight-heavy", "COPPICE_MAX_INFLIGHT_HEAVY", strconv.Itoa(api.DefaultMaxInflightHeavy()),
		"heavy requests (queries, searches, summaries, aggregations, vector searches) executing at once, within --max-inflight (default: one less than the CPUs, at least 1)")
	bulk := str("max-bulk-during-reads", "COPPICE_MAX_BULK_DURING_READS", strconv.Itoa(api.DefaultMaxBulkDuringReads()),
		"bulk inserts (coppice import's too) computing at once while reads are served (a GET or heavy request executing, or one ended within the last second); the others wait for a turn (default: one less than the CPUs, at least 1)")
	syncWaiting := str("max-sync-waiting", "COPPICE_MAX_SYNC_WAITING", strconv.Itoa(api.DefaultMaxSyncWaiting),
		"writes that may wait to be committed with others and for their shared sync without holding one of the --max-inflight slots; beyond, a write keeps its slot; 0: every write keeps it")
	queue := str("max-queue", "COPPICE_MAX_QUEUE", strconv.Itoa(api.DefaultMaxQueue),
		"requests waiting for an execution slot or body bytes; more get 503 with Retry-After; 0: none wait")
	queueWait := str("max-queue-wait", "COPPICE_MAX_QUEUE_WAIT", api.DefaultMaxQueueWait.String(),
		"time a request waits in the queue before it gets 503 with Retry-After")
	bodyInflight := str("max-body-inflight", "COPPICE_MAX_BODY_INFLIGHT", formatByteSize(api.DefaultMaxBodyInflight),
		"bytes of request bodies held at once, a byte size at least --max-body; a body that does not fit waits in the queue")
	headerTimeout := str("read-header-timeout", "COPPICE_READ_HEADER_TIMEOUT", api.DefaultReadHeaderTimeout.String(),
		"time a connection has to send a request's line and headers; then it is closed")
	idleTimeout := str("idle-timeout", "COPPICE_IDLE_TIMEOUT", api.DefaultIdleTimeout.String(),
		"time a kept-alive connection may wait for its next request; then it is closed")
	conns := str("max-conns", "COPPICE_MAX_CONNS", "0",
		"connections open at once; more are refused with 503; 0: 3/4 of the open-file limit, at most 65536")
	connsPerIP := str("max-conns-per-ip", "COPPICE_MAX_CONNS_PER_IP", "0",
		"connections open at once from one client IP (IPv6: one /64); more are refused with 503; 0: no limit")
	shutdown := str("shutdown-timeout", "COPPICE_SHUTDOWN_TIMEOUT", api.DefaultShutdownTimeout.String(),
		"time SIGTERM may take: requests in flight are cancelled, connections and the data directory closed")
	authLimit := str("auth-fail-limit", "COPPICE_AUTH_FAIL_LIMIT", strconv.Itoa(api.DefaultAuthFailLimit),
		"failed authentications a client IP may make per --auth-fail-window; then its requests get 429 until the window ends; 0: no limit")
	authWindow := str("auth-fail-window", "COPPICE_AUTH_FAIL_WINDOW", api.DefaultAuthFailWindow.String(),
		"window of --auth-fail-limit, from an address's first failure")
	maxLoad := str("max-load", "COPPICE_MAX_LOAD", formatByteSize(api.DefaultMaxLoad),
		"largest dump coppice load may send, a byte size of at most 3GiB; the server holds a load in memory while it applies it, one at a time")

	return func(maxBody int) (api.Limits, error) {
		var l api.Limits
		var errs []string
		dur := func(name string, v *string, out *time.Duration) {
			d, err := time.ParseDuration(strings.TrimSpace(*v))
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Sprintf("--%s must be a positive duration such as 30s, got %q", name, *v))
			}
			*out = d
		}
		count := func(name string, v *string, least int, out *int) {
			n, err := strconv.Atoi(strings.TrimSpace(*v))
			if err != nil || n < least {
				errs = append(errs, fmt.Sprintf("--%s must be a whole number of at least %d, got %q", name, least, *v))
			}
			*out = n
		}
		dur("request-timeout", reqTimeout, &l.RequestTimeout)
		count("max-inflight", inflight, 1, &l.MaxInflight)
		count("max-inflight-heavy", heavy, 1, &l.MaxInflightHeavy)
		count("max-bulk-during-reads", bulk, 1, &l.MaxBulkDuringReads)
		count("max-sync-waiting", syncWaiting, 0, &l.MaxSyncWaiting)
		if l.MaxSyncWaiting == 0 {
			l.MaxSyncWaiting = -1 // none
		}
		count("max-queue", queue, 0, &l.MaxQueue)
		if l.MaxQueue == 0 {
			l.MaxQueue = -1 // none wait
		}
		dur("max-queue-wait", queueWait, &l.MaxQueueWait)
		b, err := parseByteSize(*bodyInflight)
		if err != nil || b < int64(maxBody) {
			errs = append(errs, fmt.Sprintf("--max-body-inflight must be a byte size of at least --max-body (%s), got %q",
				formatByteSize(int64(maxBody)), *bodyInflight))
		}
		l.MaxBodyInflight = b
		dur("read-header-timeout", headerTimeout, &l.ReadHeaderTimeout)
		dur("idle-timeout", idleTimeout, &l.IdleTimeout)
		count("max-conns", conns, 0, &l.MaxConns)
		count("max-conns-per-ip", connsPerIP, 0, &l.MaxConnsPerIP)
		dur("shutdown-timeout", shutdown, &l.ShutdownTimeout)
		count("auth-fail-limit", authLimit, 0, &l.AuthFailLimit)
		if l.AuthFailLimit == 0 {
			l.AuthFailLimit = -1 // no limit
		}
		dur("auth-fail-window", authWindow, &l.AuthFailWindow)
		if l.MaxLoad, err = parseByteSize(*maxLoad); err != nil || l.MaxLoad <= 0 || l.MaxLoad > api.MaxMaxLoad {
			errs = append(errs, fmt.Sprintf("--max-load must be a positive byte size of at most 3GiB, got %q", *maxLoad))
		}
		if len(errs) > 0 {
			return api.Limits{}, fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return l, nil
	}
}
