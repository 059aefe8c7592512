package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coppice-db/coppice/internal/testnet"
)

// process is a `coppice serve` process started by a test.
type process struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	key    string
	ws     string // the bootstrap workspace's public id
	stderr *syncBuffer
	exited chan error
}

// syncBuffer collects a process's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startProcess starts the test binary as `coppice serve` with args and
// extra environment, waits until it answers, and kills it at the end of
// the test if it is still running.
func startProcess(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	addr := testnet.FreeAddr(t)
	p := &process{t: t, addr: addr, key: "cpk_process_test_key", stderr: &syncBuffer{}, exited: make(chan error, 1)}
	p.cmd = exec.Command(os.Args[0], append([]string{"serve", "--addr", addr, "--data", t.TempDir() + "/data"}, args...)...)
	p.cmd.Env = append(append(os.Environ(), "COPPICE_TEST_RUN_MAIN=1", "COPPICE_BOOTSTRAP_KEY="+p.key), env...)
	var stdout syncBuffer
	p.cmd.Stdout, p.cmd.Stderr = &stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if r, err := p.do("GET", "/workspaces", ""); err == nil {
			var body struct{ Workspaces []struct{ ID string } }
			json.Unmarshal(r.body, &body)
			if len(body.Workspaces) == 1 {
				p.ws = body.Workspaces[0].ID
				return p
			}
			t.Fatalf("workspaces: %d %s", r.status, r.body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start:\n%s", p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// result is a response.
type result struct {
	status int
	body   []byte
}

// do sends a request with the bootstrap key; a path starting with /db is
// sent below the bootstrap workspace.
func (p *process) do(method, path, body string) (result, error) {
	if strings.HasPrefix(path, "/db") {
		path = "/ws/" + p.ws + path
	}
	req, _ := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{resp.StatusCode, b}, nil
}

// must sends a request and fails the test unless the status is want.
func (p *process) must(want int, method, path, body string) result {
	p.t.Helper()
	r, err := p.do(method, path, body)
	if err != nil || r.status != want {
		p.t.Fatalf("%s %s: %d %s %v, want %d", method, path, r.status, r.body, err, want)
	}
	return r
}

// wait waits up to d for the process to exit and returns its error.
func (p *process) wait(d time.Duration) error {
	p.t.Helper()
	select {
	case err := <-p.exited:
		return err
	case <-time.After(d):
		p.t.Fatalf("no exit within %v\nstderr:\n%s", d, p.stderr.String())
		return nil
	}
}

// TestSIGTERMDuringLongQuery: SIGTERM while a query runs for seconds
// cancels it, and the process exits 0 at once, its data directory closed
// with no snapshot left open.
func TestSIGTERMDuringLongQuery(t *testing.T) {
	// One execution slot and no queue: a request refused as busy shows the
	// query is running.
	p := startProcess(t, []string{"COPPICE_LOG_LEVEL=info"}, "--max-inflight", "1", "--max-queue", "0")
	p.must(201, "PUT", "/workspaces/"+p.ws+"/dbs/db", `{"region":"local"}`)
	p.must(201, "PUT", "/db/db:main/tables/t", "")
	p.must(200, "POST", "/db/db:main/tables/t/columns", `{"name":"txt","type":"text"}`)
	p.must(201, "PUT", "/db/db:main/tables/t/data/r", `{"txt":"`+strings.Repeat("a", 4<<20)+`"}`)
	filter := fmt.Sprintf(`{"filter":{"txt":{"$pattern":"*%sb*"}}}`, strings.Repeat("a?", 20000))
	answered := make(chan result, 1)
	send := func() {
		go func() {
			r, _ := p.do("POST", "/db/db:main/tables/t/query", filter)
			answered <- r
		}()
	}
	send()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r, err := p.do("GET", "/user", ""); err == nil && r.status == 503 {
			break
		}
		select {
		case r := <-answered:
			// A probe took the slot first and the query was refused as
			// busy: send it again.
			if r.status != 503 {
				t.Fatalf("the query got %d %s before the shutdown", r.status, r.body)
			}
			send()
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the query never started")
		}
	}
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(10 * time.Second); err != nil {
		t.Fatalf("exit: %v\nstderr:\n%s", err, p.stderr.String())
	}
	t.Logf("exited %v after SIGTERM", time.Since(start))
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("exit took %v", d)
	}
	if r := <-answered; r.status != 503 || !bytes.Contains(r.body, []byte("shutting down")) {
		t.Errorf("the query got %d %s", r.status, r.body)
	}
	if strings.Contains(p.stderr.String(), "leaked") || strings.Contains(p.stderr.String(), "level=ERROR") {
		t.Errorf("stderr:\n%s", p.stderr.String())
	}
}

// TestOutOfDescriptors: with an open-file limit of 128 and more
// connections than descriptors, accepting pauses instead of ending the
// process; a connection opened before keeps being served, and once the
// flood closes, new connections are served again.
func TestOutOfDescriptors(t *testing.T) {
	p := startProcess(t, []string{"COPPICE_TEST_NOFILE=128"}, "--max-conns", "10000", "--read-header-timeout", "1m")
	kept, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for range 300 {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err != nil {
			break // the backlog is full: enough
		}
		flood = append(flood, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.stderr.String(), "out of file descriptors") {
		if time.Now().After(deadline) {
			t.Fatalf("no descriptor shortage after %d connections:\n%s", len(flood), p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The kept connection is served meanwhile.
	req := "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
	for range 3 {
		io.WriteString(kept, req)
		kept.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 512)
		n, err := kept.Read(buf)
		if err != nil || !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 200")) {
			t.Fatalf("kept connection: %q %v\n%s", buf[:n], err, p.stderr.String())
		}
	}
	select {
	case err := <-p.exited:
		t.Fatalf("the process exited: %v\n%s", err, p.stderr.String())
	default:
	}
	for _, c := range flood {
		c.Close()
	}
	flood = nil
	deadline = time.Now().Add(10 * time.Second)
	for {
		r, err := p.do("GET", "/user", "")
		if err == nil && r.status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not serving after the flood: %v %v\n%s", r, err, p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(10 * time.Second); err != nil {
		t.Fatalf("exit: %v\n%s", err, p.stderr.String())
	}
}
