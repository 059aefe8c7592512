package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"reflect"
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
		"import", "export", "-url", "COPPICE_URL", "-api-key", "COPPICE_API_KEY", "-workspace", "COPPICE_WORKSPACE",
		"-db", "COPPICE_DB", "-branch", "COPPICE_BRANCH", "-table", "COPPICE_TABLE", "-progress", "-progress-every",
		"-format", "-delimiter", "-create", "-infer-rows", "-skip", "-batch", "-concurrency", "-max-errors",
		"-filter", "-columns", "-sort", "-out",
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
	def := serveConfig{Addr: "127.0.0.1:8080", DataDir: "./data", CacheSize: engine.DefaultCacheSize,
		API: api.Options{Compat: "none", Domains: []string{"localhost"}, MaxBody: api.DefaultMaxBody, LogLevel: "info", PublicURL: "http://127.0.0.1:8080"}}
	f(nil, def)

	env = map[string]string{"COPPICE_ADDR": ":9000", "COPPICE_DATA": "/d", "COPPICE_COMPAT": "xata",
		"COPPICE_REGIONS": "a, b,,c", "COPPICE_MAX_BODY": "100", "COPPICE_LOG_LEVEL": "debug",
		"COPPICE_BOOTSTRAP_KEY": "k", "COPPICE_DOMAINS": "x.test,y.test", "COPPICE_CACHE_SIZE": "1048576"}
	f(nil, serveConfig{Addr: ":9000", DataDir: "/d", CacheSize: 1 << 20, BootstrapKey: "k",
		API: api.Options{Compat: "xata", Regions: []string{"a", "b", "c"}, Domains: []string{"x.test", "y.test"}, MaxBody: 100, LogLevel: "debug", PublicURL: "http://:9000"}})
	// Flags win over the environment.
	f([]string{"--addr", ":1", "--data=/e", "--compat", "none", "--regions", "r", "--max-body", "5", "--log-level", "warn", "--domains", "z", "--cache-size", "4096"},
		serveConfig{Addr: ":1", DataDir: "/e", CacheSize: 4096, BootstrapKey: "k",
			API: api.Options{Compat: "none", Regions: []string{"r"}, Domains: []string{"z"}, MaxBody: 5, LogLevel: "warn", PublicURL: "http://:1"}})
	env["COPPICE_PUBLIC_URL"] = "https://db.example.com/base"
	f([]string{"--addr", ":1"}, serveConfig{Addr: ":1", DataDir: "/d", CacheSize: 1 << 20, BootstrapKey: "k",
		API: api.Options{Compat: "xata", Regions: []string{"a", "b", "c"}, Domains: []string{"x.test", "y.test"}, MaxBody: 100, LogLevel: "debug", PublicURL: "https://db.example.com/base"}})

	for _, args := range [][]string{{"--max-body", "lots"}, {"--max-body", "0"}, {"--cache-size", "-1"}, {"--cache-size", "1GiB"}, {"--nope"}, {"extra"}, {"--public-url", "ftp://x"}} {
		if _, err := serveOptions(args, getenv, os.Stderr); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestServe runs serve in process: a first start bootstraps and prints the
// key, which then works; a second start on the same directory bootstraps
// nothing.
func TestServe(t *testing.T) {
	const key = "cpk_serve_test_0123456789abcdef"
	cfg := serveConfig{Addr: "127.0.0.1:0", DataDir: t.TempDir(), BootstrapKey: key,
		API: api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, &out, func(a net.Addr) { addrc <- a }) }()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	req, _ := http.NewRequest("GET", "http://"+addr.String()+"/workspaces/x/regions", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 { // the key works; the workspace does not exist
		t.Errorf("status %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if !strings.Contains(out.String(), key) || !strings.Contains(out.String(), api.BootstrapEmail) {
		t.Errorf("bootstrap output: %s", out.String())
	}

	out.Reset()
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- serve(ctx, cfg, &out, func(net.Addr) { cancel() }) }()
	if err := <-done; err != nil {
		t.Fatalf("second serve: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("second start printed %q", out.String())
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
// data directory, bootstrapped with key, and waits until it answers.
func startServe(t *testing.T, key string) *serveProcess {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{addr: ln.Addr().String(), data: t.TempDir() + "/data", exited: make(chan error, 1)}
	ln.Close()
	p.cmd = exec.Command(os.Args[0], "serve", "--addr", p.addr, "--data", p.data)
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
// bootstrap output, a request with the bootstrap key, and a clean exit on
// SIGTERM.
func TestServeProcess(t *testing.T) {
	const key = "cpk_process_test_key"
	p := startServe(t, key)
	p.stop(t)
	// The output buffers are safe to read once the process has exited.
	if !strings.Contains(p.stdout.String(), key) {
		t.Errorf("bootstrap output lacks the key:\n%s", p.stdout.String())
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
