package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coppice-db/coppice/api"
	"github.com/coppice-db/coppice/engine"
)

// TestMain lets the test binary act as the coppice binary for
// TestServeProcess.
func TestMain(m *testing.M) {
	if os.Getenv("COPPICE_TEST_RUN_MAIN") == "1" {
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
		"-cache-size", "COPPICE_CACHE_SIZE", "-public-url", "COPPICE_PUBLIC_URL",
		"-log-level", "COPPICE_LOG_LEVEL", "COPPICE_BOOTSTRAP_KEY", "127.0.0.1:8080", "./data",
		"-log-format", "COPPICE_LOG_FORMAT", "-slow-request", "COPPICE_SLOW_REQUEST", "500ms",
		"-metrics-addr", "COPPICE_METRICS_ADDR", "version", "healthcheck", "/readyz", "/openapi.json",
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
	if code := run([]string{"healthcheck", "--url", "http://" + freeAddr(t) + "/healthz", "--timeout", "2s"},
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
	f := func(args []string, want api.Options) {
		t.Helper()
		got, err := serveOptions(args, getenv, os.Stderr)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v with %v:\n got %+v\nwant %+v", args, env, got, want)
		}
	}
	def := api.Options{Addr: "127.0.0.1:8080", DataDir: "./data", Compat: "none", Domains: []string{"localhost"},
		MaxBody: api.DefaultMaxBody, CacheSize: engine.DefaultCacheSize, LogLevel: "info", PublicURL: "http://127.0.0.1:8080",
		LogFormat: "text", SlowRequest: api.DefaultSlowRequest}
	f(nil, def)
	obs := def
	obs.LogFormat, obs.SlowRequest, obs.MetricsAddr = "json", 2*time.Second, "127.0.0.1:9090"
	f([]string{"--log-format", "json", "--slow-request", "2s", "--metrics-addr", "127.0.0.1:9090"}, obs)
	env = map[string]string{"COPPICE_LOG_FORMAT": "json", "COPPICE_SLOW_REQUEST": "2s", "COPPICE_METRICS_ADDR": "127.0.0.1:9090"}
	f(nil, obs)
	obs.SlowRequest = -1
	f([]string{"--slow-request", "0"}, obs)

	env = map[string]string{"COPPICE_ADDR": ":9000", "COPPICE_DATA": "/d", "COPPICE_COMPAT": "xata",
		"COPPICE_REGIONS": "a, b,,c", "COPPICE_MAX_BODY": "100", "COPPICE_LOG_LEVEL": "debug",
		"COPPICE_BOOTSTRAP_KEY": "k", "COPPICE_DOMAINS": "x.test,y.test", "COPPICE_CACHE_SIZE": "1048576"}
	f(nil, api.Options{Addr: ":9000", DataDir: "/d", Compat: "xata", Regions: []string{"a", "b", "c"},
		Domains: []string{"x.test", "y.test"}, MaxBody: 100, CacheSize: 1 << 20, LogLevel: "debug", BootstrapKey: "k", PublicURL: "http://:9000",
		LogFormat: "text", SlowRequest: api.DefaultSlowRequest})
	// Flags win over the environment.
	f([]string{"--addr", ":1", "--data=/e", "--compat", "none", "--regions", "r", "--max-body", "5", "--log-level", "warn", "--domains", "z", "--cache-size", "4096"},
		api.Options{Addr: ":1", DataDir: "/e", Compat: "none", Regions: []string{"r"}, Domains: []string{"z"},
			MaxBody: 5, CacheSize: 4096, LogLevel: "warn", BootstrapKey: "k", PublicURL: "http://:1", LogFormat: "text", SlowRequest: api.DefaultSlowRequest})
	env["COPPICE_PUBLIC_URL"] = "https://db.example.com/base"
	f([]string{"--addr", ":1"}, api.Options{Addr: ":1", DataDir: "/d", Compat: "xata", Regions: []string{"a", "b", "c"},
		Domains: []string{"x.test", "y.test"}, MaxBody: 100, CacheSize: 1 << 20, LogLevel: "debug", BootstrapKey: "k", PublicURL: "https://db.example.com/base",
		LogFormat: "text", SlowRequest: api.DefaultSlowRequest})

	for _, args := range [][]string{{"--max-body", "lots"}, {"--max-body", "0"}, {"--cache-size", "-1"}, {"--cache-size", "1GiB"}, {"--nope"}, {"extra"}, {"--public-url", "ftp://x"},
		{"--log-format", "xml"}, {"--slow-request", "soon"}, {"--slow-request", "-1s"}} {
		if _, err := serveOptions(args, getenv, os.Stderr); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeProcess runs `coppice serve` as a process: first-start
// bootstrap output, a request with the bootstrap key, readiness, the
// metrics listener, JSON access logs without the key, the healthcheck
// command, and a clean exit on SIGTERM.
func TestServeProcess(t *testing.T) {
	addr, metrics := freeAddr(t), freeAddr(t)
	const key = "cpk_process_test_key"
	cmd := exec.Command(os.Args[0], "serve", "--addr", addr, "--data", t.TempDir()+"/data", "--metrics-addr", metrics)
	cmd.Env = append(os.Environ(), "COPPICE_TEST_RUN_MAIN=1", "COPPICE_BOOTSTRAP_KEY="+key, "COPPICE_LOG_FORMAT=json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			cmd.Process.Kill()
			<-exited
		}
	}()

	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequest("GET", "http://"+addr+"/dbs/none", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("status %d, want 404 (the key works, the database does not exist)", resp.StatusCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
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
	if st, body := get("http://" + addr + "/readyz"); st != 200 {
		t.Errorf("/readyz: %d %s", st, body)
	}
	if st, body := get("http://" + metrics + "/metrics"); st != 200 ||
		!strings.Contains(body, `coppice_http_requests_total{method="GET",route="/dbs/{db_name}",status="404"} 1`) ||
		!strings.Contains(body, "process_resident_memory_bytes") {
		t.Errorf("/metrics: %d\n%s", st, body)
	}
	var errOut bytes.Buffer
	if code := run([]string{"healthcheck", "--url", "http://" + addr + "/healthz"}, func(string) string { return "" }, io.Discard, &errOut); code != 0 {
		t.Errorf("healthcheck: exit %d: %s", code, errOut.String())
	}
	if code := run([]string{"healthcheck"}, func(string) string { return addr }, io.Discard, &errOut); code != 0 {
		t.Errorf("healthcheck from COPPICE_ADDR: exit %d: %s", code, errOut.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Fatalf("exit: %v\nstderr: %s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	// The output buffers are safe to read once the process has exited.
	if !strings.Contains(stdout.String(), key) {
		t.Errorf("bootstrap output lacks the key:\n%s", stdout.String())
	}
	logs := stderr.String()
	for _, want := range []string{`"msg":"listening"`, `"msg":"serving metrics"`, `"msg":"request"`, `"route":"/dbs/{db_name}"`, `"status":404`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, key) {
		t.Errorf("the log holds the API key:\n%s", logs)
	}
}
