package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coppice-db/coppice/api"
	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/internal/testnet"
)

// TestMain lets the test binary act as the coppice binary for the process
// tests, with COPPICE_TEST_NOFILE as its open-file limit, soft and hard,
// when set.
func TestMain(m *testing.M) {
	if os.Getenv("COPPICE_TEST_RUN_MAIN") == "1" {
		if n, err := strconv.ParseUint(os.Getenv("COPPICE_TEST_NOFILE"), 10, 64); err == nil {
			if err := limitOpenFiles(n); err != nil {
				panic(err)
			}
		}
		main()
		return
	}
	os.Exit(m.Run())
}

func TestHelpDocumentsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"--help"}, func(string) string { return "" }, &out, &out); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, s := range []string{
		"serve", "-addr", "COPPICE_ADDR", "-data", "COPPICE_DATA", "-compat", "COPPICE_COMPAT",
		"-regions", "COPPICE_REGIONS", "-domains", "COPPICE_DOMAINS", "-max-body", "COPPICE_MAX_BODY",
		"-cache-size", "COPPICE_CACHE_SIZE", "-memory-limit", "COPPICE_MEMORY_LIMIT", "-record-cache-size", "COPPICE_RECORD_CACHE_SIZE",
		"-compact-idle", "COPPICE_COMPACT_IDLE", "-min-free-space", "COPPICE_MIN_FREE_SPACE", "-public-url", "COPPICE_PUBLIC_URL",
		"-log-level", "COPPICE_LOG_LEVEL", "COPPICE_BOOTSTRAP_KEY", "127.0.0.1:8080", "./data",
		"import", "export", "-url", "COPPICE_URL", "-api-key", "COPPICE_API_KEY", "-workspace", "COPPICE_WORKSPACE",
		"-db", "COPPICE_DB", "-branch", "COPPICE_BRANCH", "-table", "COPPICE_TABLE", "-progress", "-progress-every",
		"-format", "-delimiter", "-create", "-infer-rows", "-skip", "-batch", "-concurrency", "-max-errors",
		"-filter", "-columns", "-sort", "-out",
		"-request-timeout", "COPPICE_REQUEST_TIMEOUT", "-max-inflight", "COPPICE_MAX_INFLIGHT",
		"-max-inflight-heavy", "COPPICE_MAX_INFLIGHT_HEAVY", "-max-bulk-during-reads", "COPPICE_MAX_BULK_DURING_READS", "-max-sync-waiting", "COPPICE_MAX_SYNC_WAITING",
		"-max-queue", "COPPICE_MAX_QUEUE", "-max-queue-wait", "COPPICE_MAX_QUEUE_WAIT",
		"-max-body-inflight", "COPPICE_MAX_BODY_INFLIGHT", "-read-header-timeout", "COPPICE_READ_HEADER_TIMEOUT",
		"-idle-timeout", "COPPICE_IDLE_TIMEOUT", "-max-conns", "COPPICE_MAX_CONNS",
		"-max-conns-per-ip", "COPPICE_MAX_CONNS_PER_IP", "-shutdown-timeout", "COPPICE_SHUTDOWN_TIMEOUT",
		"-auth-fail-limit", "COPPICE_AUTH_FAIL_LIMIT", "-auth-fail-window", "COPPICE_AUTH_FAIL_WINDOW", "32MiB",
		"-log-format", "COPPICE_LOG_FORMAT", "-slow-request", "COPPICE_SLOW_REQUEST", "500ms",
		"-metrics-addr", "COPPICE_METRICS_ADDR", "version", "healthcheck", "/readyz", "/openapi.json",
		"-max-load", "COPPICE_MAX_LOAD", "backup", "restore", "dump", "load", "-to", "-from", "-region",
		"coppice backup --to DIR", "coppice restore --from DIR --data DIR", "coppice dump --db NAME [--branch B]",
		"coppice load [--db NAME] [flags] FILE",
	} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("help does not mention %s:\n%s", s, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"serve", "-h"}, func(string) string { return "" }, &out, &out); code != 0 || !strings.Contains(out.String(), "-max-body") {
		t.Errorf("serve -h: exit %d\n%s", code, out.String())
	}
	if code := run([]string{"bogus"}, func(string) string { return "" }, &out, &out); code != 2 {
		t.Errorf("unknown command: exit %d", code)
	}
}

// TestHealthcheck checks the exit status of `coppice healthcheck` against
// a server that is not there, and its address defaults.
func TestHealthcheck(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"healthcheck", "--url", "http://" + testnet.FreeAddr(t) + "/healthz", "--timeout", "2s"},
		func(string) string { return "" }, &out, &out); code != 1 {
		t.Errorf("no server: exit %d", code)
	}
	if code := run([]string{"healthcheck", "--bogus"}, func(string) string { return "" }, &out, &out); code != 2 {
		t.Errorf("bad flag: exit %d", code)
	}
	f := func(in, want string) {
		t.Helper()
		if got := localAddr(in); got != want {
			t.Errorf("localAddr(%q) = %q, want %q", in, got, want)
		}
	}
	f("", "127.0.0.1:8080")
	f("0.0.0.0:8080", "127.0.0.1:8080")
	f(":9000", "127.0.0.1:9000")
	f("[::]:9000", "127.0.0.1:9000")
	f("10.1.2.3:80", "10.1.2.3:80")
	f("db.internal:80", "db.internal:80")
}

func TestVersion(t *testing.T) {
	want := api.ReadBuildInfo().String()
	for _, arg := range []string{"version", "--version", "-version"} {
		var out bytes.Buffer
		if code := run([]string{arg}, func(string) string { return "" }, &out, &out); code != 0 {
			t.Fatalf("%s: exit %d", arg, code)
		}
		if out.String() != want || !strings.HasPrefix(want, "coppice ") || !strings.Contains(want, runtime.Version()) ||
			!strings.Contains(want, "commit ") {
			t.Errorf("%s: %q, want %q", arg, out.String(), want)
		}
	}
}

func TestServeOptions(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	f := func(args []string, want serveConfig) {
		t.Helper()
		got, err := serveOptions(args, getenv, os.Stderr)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v with %v:\n got %+v\nwant %+v", args, env, got, want)
		}
	}
	lim := api.Limits{RequestTimeout: 30 * time.Second, MaxInflight: api.DefaultMaxInflight(),
		MaxInflightHeavy: api.DefaultMaxInflightHeavy(), MaxBulkDuringReads: api.DefaultMaxBulkDuringReads(), MaxSyncWaiting: api.DefaultMaxSyncWaiting, MaxQueue: 256,
		MaxQueueWait: 10 * time.Second, MaxBodyInflight: 256 << 20, ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 2 * time.Minute, ShutdownTimeout: 30 * time.Second, AuthFailLimit: 20, AuthFailWindow: time.Minute,
		MaxLoad: api.DefaultMaxLoad}
	mem := defaultMemoryLimit()
	def := serveConfig{Addr: "127.0.0.1:8080", DataDir: "./data", MemoryLimit: mem,
		API: api.Options{RecordCacheSize: api.DefaultRecordCacheSize, Compat: "none", Domains: []string{"localhost"}, MaxBody: api.DefaultMaxBody, LogLevel: "info",
			PublicURL: "http://127.0.0.1:8080", LogFormat: "text", SlowRequest: api.DefaultSlowRequest, Limits: lim}}
	def.CompactIdle, def.MinFreeSpace = engine.DefaultCompactIdle, engine.DefaultMinFreeSpace
	f(nil, def)
	obs := def
	obs.API.LogFormat, obs.API.SlowRequest, obs.MetricsAddr = "json", 2*time.Second, "127.0.0.1:9090"
	f([]string{"--log-format", "json", "--slow-request", "2s", "--metrics-addr", "127.0.0.1:9090"}, obs)
	env = map[string]string{"COPPICE_LOG_FORMAT": "json", "COPPICE_SLOW_REQUEST": "2s", "COPPICE_METRICS_ADDR": "127.0.0.1:9090"}
	f(nil, obs)
	obs.API.SlowRequest = -1
	f([]string{"--slow-request", "0"}, obs)
	env = map[string]string{"COPPICE_MEMORY_LIMIT": "1GiB"}
	mine := def
	mine.MemoryLimit = 1 << 30
	f(nil, mine)
	mine.MemoryLimit, mine.CacheSize = 3<<29, 100<<20
	f([]string{"--memory-limit", "1.5GiB", "--cache-size", "100MiB"}, mine)
	env = map[string]string{}
	rc := def
	rc.API.RecordCacheSize = -1 // off
	f([]string{"--record-cache-size", "0"}, rc)
	rc.API.RecordCacheSize = 64 << 20
	env = map[string]string{"COPPICE_RECORD_CACHE_SIZE": "64MiB"}
	f(nil, rc)
	env = map[string]string{}
	ci := def
	ci.CompactIdle = -1 // off
	f([]string{"--compact-idle", "0"}, ci)
	ci.CompactIdle = 30 * time.Second
	env = map[string]string{"COPPICE_COMPACT_IDLE": "30s"}
	f(nil, ci)
	env = map[string]string{}
	mf := def
	mf.MinFreeSpace = -1 // off
	f([]string{"--min-free-space", "0"}, mf)
	mf.MinFreeSpace = 1 << 30
	env = map[string]string{"COPPICE_MIN_FREE_SPACE": "1GiB"}
	f(nil, mf)

	env = map[string]string{"COPPICE_ADDR": ":9000", "COPPICE_DATA": "/d", "COPPICE_COMPAT": "xata",
		"COPPICE_REGIONS": "a, b,,c", "COPPICE_MAX_BODY": "100", "COPPICE_LOG_LEVEL": "debug",
		"COPPICE_BOOTSTRAP_KEY": "k", "COPPICE_DOMAINS": "x.test,y.test", "COPPICE_CACHE_SIZE": "1048576"}
	f(nil, serveConfig{Addr: ":9000", DataDir: "/d", MemoryLimit: mem, CompactIdle: engine.DefaultCompactIdle, MinFreeSpace: engine.DefaultMinFreeSpace, CacheSize: 1 << 20, BootstrapKey: "k",
		API: api.Options{RecordCacheSize: api.DefaultRecordCacheSize, Compat: "xata", Regions: []string{"a", "b", "c"}, Domains: []string{"x.test", "y.test"}, MaxBody: 100,
			LogLevel: "debug", PublicURL: "http://:9000", LogFormat: "text", SlowRequest: api.DefaultSlowRequest, Limits: lim}})
	// Flags win over the environment.
	f([]string{"--addr", ":1", "--data=/e", "--compat", "none", "--regions", "r", "--max-body", "5", "--log-level", "warn", "--domains", "z", "--cache-size", "4096"},
		serveConfig{Addr: ":1", DataDir: "/e", MemoryLimit: mem, CompactIdle: engine.DefaultCompactIdle, MinFreeSpace: engine.DefaultMinFreeSpace, CacheSize: 4096, BootstrapKey: "k",
			API: api.Options{RecordCacheSize: api.DefaultRecordCacheSize, Compat: "none", Regions: []string{"r"}, Domains: []string{"z"}, MaxBody: 5,
				LogLevel: "warn", PublicURL: "http://:1", LogFormat: "text", SlowRequest: api.DefaultSlowRequest, Limits: lim}})
	env["COPPICE_PUBLIC_URL"] = "https://db.example.com/base"
	f([]string{"--addr", ":1"}, serveConfig{Addr: ":1", DataDir: "/d", MemoryLimit: mem, CompactIdle: engine.DefaultCompactIdle, MinFreeSpace: engine.DefaultMinFreeSpace, CacheSize: 1 << 20, BootstrapKey: "k",
		API: api.Options{RecordCacheSize: api.DefaultRecordCacheSize, Compat: "xata", Regions: []string{"a", "b", "c"}, Domains: []string{"x.test", "y.test"}, MaxBody: 100,
			LogLevel: "debug", PublicURL: "https://db.example.com/base", LogFormat: "text", SlowRequest: api.DefaultSlowRequest, Limits: lim}})

	// Byte sizes take units; every limit has a flag and a variable.
	env = map[string]string{"COPPICE_MAX_BODY": "1.5MiB", "COPPICE_MEMORY_LIMIT": "8GiB", "COPPICE_CACHE_SIZE": "2GiB", "COPPICE_REQUEST_TIMEOUT": "5s",
		"COPPICE_MAX_INFLIGHT": "3", "COPPICE_MAX_INFLIGHT_HEAVY": "2", "COPPICE_MAX_BULK_DURING_READS": "3", "COPPICE_MAX_SYNC_WAITING": "0", "COPPICE_MAX_QUEUE": "0", "COPPICE_MAX_QUEUE_WAIT": "250ms",
		"COPPICE_MAX_BODY_INFLIGHT": "1GB", "COPPICE_READ_HEADER_TIMEOUT": "2s", "COPPICE_IDLE_TIMEOUT": "1m",
		"COPPICE_MAX_CONNS": "100", "COPPICE_MAX_CONNS_PER_IP": "7", "COPPICE_SHUTDOWN_TIMEOUT": "3s",
		"COPPICE_AUTH_FAIL_LIMIT": "0", "COPPICE_AUTH_FAIL_WINDOW": "10s", "COPPICE_MAX_LOAD": "2GiB"}
	custom := api.Limits{RequestTimeout: 5 * time.Second, MaxInflight: 3, MaxInflightHeavy: 2, MaxBulkDuringReads: 3, MaxSyncWaiting: -1, MaxQueue: -1, MaxQueueWait: 250 * time.Millisecond,
		MaxBodyInflight: 1e9, ReadHeaderTimeout: 2 * time.Second, IdleTimeout: time.Minute, MaxConns: 100, MaxConnsPerIP: 7,
		ShutdownTimeout: 3 * time.Second, AuthFailLimit: -1, AuthFailWindow: 10 * time.Second, MaxLoad: 2 << 30}
	f(nil, serveConfig{Addr: "127.0.0.1:8080", DataDir: "./data", MemoryLimit: 8 << 30, CompactIdle: engine.DefaultCompactIdle, MinFreeSpace: engine.DefaultMinFreeSpace, CacheSize: 2 << 30,
		API: api.Options{RecordCacheSize: api.DefaultRecordCacheSize, Compat: "none", Domains: []string{"localhost"}, MaxBody: 3 << 19, LogLevel: "info",
			PublicURL: "http://127.0.0.1:8080", LogFormat: "text", SlowRequest: api.DefaultSlowRequest, Limits: custom}})
	custom.MaxInflight, custom.MaxInflightHeavy, custom.MaxQueue, custom.AuthFailLimit, custom.MaxBodyInflight = 9, 5, 4, 2, 64<<20
	custom.MaxSyncWaiting, custom.MaxBulkDuringReads = 100, 1
	f([]string{"--max-inflight", "9", "--max-inflight-heavy", "5", "--max-bulk-during-reads", "1", "--max-sync-waiting", "100", "--max-queue=4", "--auth-fail-limit", "2", "--max-body-inflight", "64M"},
		serveConfig{Addr: "127.0.0.1:8080", DataDir: "./data", MemoryLimit: 8 << 30, CompactIdle: engine.DefaultCompactIdle, MinFreeSpace: engine.DefaultMinFreeSpace, CacheSize: 2 << 30,
			API: api.Options{RecordCacheSize: api.DefaultRecordCacheSize, Compat: "none", Domains: []string{"localhost"}, MaxBody: 3 << 19, LogLevel: "info",
				PublicURL: "http://127.0.0.1:8080", LogFormat: "text", SlowRequest: api.DefaultSlowRequest, Limits: custom}})
	env = map[string]string{}

	for _, args := range [][]string{
		{"--max-body", "lots"}, {"--max-body", "0"}, {"--max-body", "3GiB"}, {"--cache-size", "-1"}, {"--cache-size", "1XB"},
		{"--memory-limit", "1GiB", "--cache-size", "600MiB"}, {"--memory-limit", "64MiB"}, {"--memory-limit", "lots"},
		{"--nope"}, {"extra"}, {"--public-url", "ftp://x"}, {"--request-timeout", "0s"}, {"--request-timeout", "30"},
		{"--max-inflight", "0"}, {"--max-sync-waiting", "-1"}, {"--max-sync-waiting", "many"}, {"--max-queue", "-1"}, {"--max-queue-wait", "soon"}, {"--max-body-inflight", "1MiB"},
		{"--read-header-timeout", "-1s"}, {"--idle-timeout", ""}, {"--max-conns", "-5"}, {"--max-conns-per-ip", "x"},
		{"--shutdown-timeout", "0"}, {"--auth-fail-limit", "-1"}, {"--auth-fail-window", "1"},
		{"--log-format", "xml"}, {"--slow-request", "soon"}, {"--slow-request", "-1s"},
		{"--max-load", "0"}, {"--max-load", "4GiB"}, {"--max-load", "big"},
		{"--record-cache-size", "-1"}, {"--record-cache-size", "3GiB"}, {"--record-cache-size", "many"},
		{"--compact-idle", "-1s"}, {"--compact-idle", "5"},
		{"--min-free-space", "-1"}, {"--min-free-space", "lots"},
	} {
		if _, err := serveOptions(args, getenv, os.Stderr); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// serveProcess is `coppice serve` running as a child process.
type serveProcess struct {
	addr, data     string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	exited         chan error
	stopped        bool
}

// startServe starts `coppice serve` on a free loopback port and an empty
// data directory, bootstrapped with key, with the extra flags, and waits
// until it answers.
func startServe(t *testing.T, key string, extra ...string) *serveProcess {
	t.Helper()
	p := &serveProcess{addr: testnet.FreeAddr(t), data: t.TempDir() + "/data", exited: make(chan error, 1)}
	p.cmd = exec.Command(os.Args[0], append([]string{"serve", "--addr", p.addr, "--data", p.data}, extra...)...)
	p.cmd.Env = append(os.Environ(), "COPPICE_TEST_RUN_MAIN=1", "COPPICE_BOOTSTRAP_KEY="+key, "COPPICE_LOG_LEVEL=warn")
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if !p.stopped {
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequest("GET", "http://"+p.addr+"/dbs/none", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("status %d, want 404 (the key works, the database does not exist)", resp.StatusCode)
			}
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *serveProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		p.stopped = true
		if err != nil {
			t.Fatalf("exit: %v\nstderr: %s", err, p.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
}

// TestServeProcess runs `coppice serve` as a process: first-start
// bootstrap output, a request with the bootstrap key, readiness, the
// metrics listener, JSON access logs without the key, the healthcheck
// command, and a clean exit on SIGTERM.
func TestServeProcess(t *testing.T) {
	const key = "cpk_process_test_key"
	metrics := testnet.FreeAddr(t)
	p := startServe(t, key, "--metrics-addr", metrics, "--log-level", "info", "--log-format", "json")
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := get("http://" + p.addr + "/readyz"); st != 200 {
		t.Errorf("/readyz: %d %s", st, body)
	}
	if st, body := get("http://" + metrics + "/metrics"); st != 200 ||
		!strings.Contains(body, `coppice_http_requests_total{method="GET",route="/dbs/{db_name}",status="404"} 1`) ||
		!strings.Contains(body, "process_resident_memory_bytes") ||
		// The engine's families, wired to the engine the server opened.
		!strings.Contains(body, "coppice_storage_wal_syncs_total ") || !strings.Contains(body, `coppice_storage_level_bytes{level="6"}`) ||
		!strings.Contains(body, "coppice_databases 0") || !strings.Contains(body, "coppice_store_builds_total 0") ||
		!strings.Contains(body, "coppice_http_requests_queued 0") || !strings.Contains(body, `coppice_http_rejections_total{reason="busy"} 0`) {
		t.Errorf("/metrics: %d\n%s", st, body)
	}
	var errOut bytes.Buffer
	if code := run([]string{"healthcheck", "--url", "http://" + p.addr + "/healthz"}, func(string) string { return "" }, io.Discard, &errOut); code != 0 {
		t.Errorf("healthcheck: exit %d: %s", code, errOut.String())
	}
	if code := run([]string{"healthcheck"}, func(string) string { return p.addr }, io.Discard, &errOut); code != 0 {
		t.Errorf("healthcheck from COPPICE_ADDR: exit %d: %s", code, errOut.String())
	}
	p.stop(t)
	// The output buffers are safe to read once the process has exited.
	// The key came from COPPICE_BOOTSTRAP_KEY: the banner does not repeat it.
	if out := p.stdout.String(); strings.Contains(out, key) || !strings.Contains(out, "COPPICE_BOOTSTRAP_KEY") {
		t.Errorf("bootstrap output:\n%s", out)
	}
	logs := p.stderr.String()
	for _, want := range []string{`"msg":"listening"`, `"msg":"serving metrics"`, `"msg":"request"`, `"route":"/dbs/{db_name}"`, `"status":404`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, key) {
		t.Errorf("the log holds the API key:\n%s", logs)
	}
}

// TestMakeRun checks that `make run` starts the server with the address and
// data directory of the environment (COPPICE_ADDR, COPPICE_DATA) unless the
// make variables ADDR and DATA are given: it asks make for the command
// (make -n) and parses that command's arguments as serve would.
func TestMakeRun(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	env := map[string]string{"COPPICE_ADDR": "127.0.0.1:9123", "COPPICE_DATA": "/srv/coppice-env"}
	f := func(vars []string, wantAddr, wantData string) {
		t.Helper()
		cmd := exec.Command(mk, append([]string{"-n", "-C", "../..", "run"}, vars...)...)
		// Only the environment under test: nothing a calling make passes
		// down (MAKEFLAGS carries its command-line variables) and no ADDR
		// or DATA of the caller's.
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n run %v: %v\n%s", vars, err, out)
		}
		var args []string
		found := false
		for _, line := range strings.Split(string(out), "\n") {
			fields := strings.Fields(line)
			if len(fields) >= 2 && fields[0] == "./bin/coppice" && fields[1] == "serve" {
				args, found = fields[2:], true
			}
		}
		if !found {
			t.Fatalf("make -n run %v runs no ./bin/coppice serve:\n%s", vars, out)
		}
		o, err := serveOptions(args, func(k string) string { return env[k] }, os.Stderr)
		if err != nil {
			t.Fatalf("make -n run %v: serve %v: %v", vars, args, err)
		}
		if o.Addr != wantAddr || o.DataDir != wantData {
			t.Errorf("make run %v runs serve %v: addr %s, data %s; want %s, %s", vars, args, o.Addr, o.DataDir, wantAddr, wantData)
		}
	}
	f(nil, "127.0.0.1:9123", "/srv/coppice-env")
	f([]string{"ADDR=127.0.0.1:9999"}, "127.0.0.1:9999", "/srv/coppice-env")
	f([]string{"DATA=/srv/other"}, "127.0.0.1:9123", "/srv/other")
	f([]string{"ADDR=:7", "DATA=/d"}, ":7", "/d")
	// Without the environment, the server's own defaults.
	env = nil
	f(nil, "127.0.0.1:8080", "./data")
}

func TestParseByteSize(t *testing.T) {
	f := func(in string, want int64) {
		t.Helper()
		got, err := parseByteSize(in)
		if err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
		if want > 0 {
			if back, err := parseByteSize(formatByteSize(want)); err != nil || back != want {
				t.Errorf("formatByteSize(%d) = %q reads back as %d, %v", want, formatByteSize(want), back, err)
			}
		}
	}
	f("0", 0)
	f("1048576", 1<<20)
	f(" 512MiB ", 512<<20)
	f("2GiB", 2<<30)
	f("2gib", 2<<30)
	f("1.5GB", 1_500_000_000)
	f("1.5 GiB", 3<<29)
	f("64k", 64<<10)
	f("10KB", 10_000)
	f("1TiB", 1<<40)
	f("7B", 7)
	f("1.9B", 1)
	f("0.5KiB", 512)
	f("9223372036854775807", 1<<63-1)
	for _, bad := range []string{"", "MiB", "1.2.3MiB", "-1", "1XB", "1 M B", "12e3", "9223372036854775808", "8EiB", "9000000TiB", "0x10"} {
		if n, err := parseByteSize(bad); err == nil {
			t.Errorf("parseByteSize(%q) = %d, want an error", bad, n)
		}
	}
	if got := formatByteSize(1000); got != "1000" {
		t.Errorf("formatByteSize(1000) = %q", got)
	}
}

// TestHumanBytes checks the sizes summaries show.
func TestHumanBytes(t *testing.T) {
	f := func(n int64, want string) {
		t.Helper()
		if got := humanBytes(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
	f(0, "0 B")
	f(1023, "1023 B")
	f(1024, "1.00 KiB")
	f(14116, "13.8 KiB")
	f(150<<20, "150 MiB")
	f(3<<30+1<<29, "3.50 GiB")
	f(2<<40, "2.00 TiB")
}

// TestDefaultMemoryLimit checks the default --memory-limit: half of the
// memory the process may have, at least the smallest default.
func TestDefaultMemoryLimit(t *testing.T) {
	for _, c := range []struct{ avail, want int64 }{
		{0, unknownMemoryLimit},
		{-1, unknownMemoryLimit},
		{256 << 20, minDefaultMemoryLimit},
		{3 << 30, 3 << 29},
		{4 << 30, 2 << 30},
		{64 << 30, 32 << 30},
	} {
		if got := defaultLimitOf(c.avail); got != c.want {
			t.Errorf("with %d bytes available: default %d, want %d", c.avail, got, c.want)
		}
	}
	if got := defaultMemoryLimit(); got < minDefaultMemoryLimit {
		t.Errorf("default %d on this machine, below %d", got, minDefaultMemoryLimit)
	}
}
