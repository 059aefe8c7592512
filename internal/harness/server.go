// Package harness runs real `coppice serve` processes for tests that need
// the whole program: crash and restart loops, signals, resource limits,
// several nodes. It builds the binary, starts it on a free loopback port
// with the flags and environment a test gives, waits until it answers,
// keeps everything it writes to stdout and stderr, and stops it by SIGTERM
// or SIGKILL. A Client speaks HTTP to it with the API key; a Ledger and its
// writers record every write the server acknowledged, to check them after
// a restart. Secrets watches logs and responses for API keys.
//
// Nothing here imports the server's packages: it drives the binary the way
// an operator and a client would.
package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coppice-db/coppice/internal/testnet"
)

// Build compiles cmd/coppice with the build tags of the Makefile into dir
// and returns the binary's path. The module is found from the working
// directory, which must be inside it (as a test's is). The binary is also
// built with the tag coppice_faultfs: COPPICE_TEST_DISK_FULL=signal then
// makes its disk full at SIGUSR1 (Server.Signal).
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "coppice")
	cmd := exec.Command("go", "build", "-tags", "pebblegozstd,coppice_faultfs", "-o", bin, "github.com/coppice-db/coppice/cmd/coppice")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// Config says how to run a server.
type Config struct {
	// Binary is the coppice executable, from Build.
	Binary string
	// Dir holds the data directory (Dir/data) and the logs of every run
	// (Dir/run-N.log). Empty: a new temporary directory of the test.
	Dir string
	// Addr is the listen address; empty: a free loopback port, kept
	// across restarts.
	Addr string
	// Key is the bootstrap API key (COPPICE_BOOTSTRAP_KEY); empty: a fixed
	// test key.
	Key string
	// Args are further flags of `coppice serve`.
	Args []string
	// Env are further environment variables, NAME=value.
	Env []string
	// NoFile, when not zero, is the open-file limit, soft and hard, the
	// process runs under (set with prlimit(1), which needs root to raise
	// the hard limit above the caller's).
	NoFile uint64
	// Wrap, when set, is a command the process runs under, such as
	// ["ip", "netns", "exec", "ns1"] (which executes the server in its
	// place, so that signals reach it).
	Wrap []string
	// ReadyTimeout bounds the wait for the server to answer; 0: 30 s.
	ReadyTimeout time.Duration
}

// DefaultKey is the bootstrap key of a Config without one.
const DefaultKey = "cpk_reliability_harness_key_0123456789"

// Server is a coppice process and its data directory, which outlives the
// process: Start again after Kill or Terminate restarts it on the same data
// and address. Its methods are not safe for concurrent use, except Logs,
// Running and Exited.
type Server struct {
	t    testing.TB
	cfg  Config
	Addr string // host:port
	Key  string
	// WS is the public id of the bootstrap workspace.
	WS string
	// Runs counts the processes started.
	Runs int

	cmd    *exec.Cmd
	exited chan struct{} // closed when the current process has exited
	state  *os.ProcessState
	logs   *logSink
}

// New prepares a server from cfg without starting it. The test's cleanup
// kills a process still running at its end.
func New(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.Key == "" {
		cfg.Key = DefaultKey
	}
	if cfg.Addr == "" {
		cfg.Addr = testnet.FreeAddr(t)
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	s := &Server{t: t, cfg: cfg, Addr: cfg.Addr, Key: cfg.Key, logs: &logSink{}}
	t.Cleanup(func() {
		if s.Running() {
			s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("the server's last run logged (last %d lines):\n%s", failedLogLines, s.tail(failedLogLines))
		}
	})
	return s
}

// Start runs the process and waits until it answers with its bootstrap
// workspace; it fails the test when the process exits or does not answer
// in time.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("start coppice: %v\nlog:\n%s", err, s.LastLog())
	}
}

// start is Start returning its error.
func (s *Server) start() error {
	if s.Running() {
		return errors.New("already running")
	}
	s.Runs++
	args := append([]string{"serve", "--addr", s.Addr, "--data", filepath.Join(s.cfg.Dir, "data")}, s.cfg.Args...)
	name := s.cfg.Binary
	if s.cfg.NoFile > 0 {
		n := strconv.FormatUint(s.cfg.NoFile, 10)
		args = append([]string{"--nofile=" + n + ":" + n, "--", name}, args...)
		name = "prlimit"
	}
	if len(s.cfg.Wrap) > 0 {
		args = append(append(append([]string{}, s.cfg.Wrap[1:]...), name), args...)
		name = s.cfg.Wrap[0]
	}
	f, err := os.Create(filepath.Join(s.cfg.Dir, fmt.Sprintf("run-%d.log", s.Runs)))
	if err != nil {
		return err
	}
	s.logs.begin(f)
	cmd := exec.Command(name, args...)
	cmd.Env = append(append(os.Environ(), "COPPICE_BOOTSTRAP_KEY="+s.Key), s.cfg.Env...)
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	s.cmd, s.state = cmd, nil
	exited := make(chan struct{})
	s.exited = exited
	go func() {
		cmd.Wait()
		s.logs.end()
		close(exited)
	}()
	return s.waitReady()
}

// waitReady polls the server until its bootstrap workspace is listed.
func (s *Server) waitReady() error {
	c := s.Client()
	deadline := time.Now().Add(s.cfg.ReadyTimeout)
	for {
		r, err := c.Do("GET", "/workspaces", nil)
		if err == nil && r.Status == 200 {
			var body struct{ Workspaces []struct{ ID string } }
			if err := json.Unmarshal(r.Body, &body); err != nil || len(body.Workspaces) == 0 {
				return fmt.Errorf("workspaces: %s", r.Body)
			}
			s.WS = body.Workspaces[0].ID
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited during start: %v", s.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v (last: %v %v)", s.cfg.ReadyTimeout, r.Status, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Running reports whether the process is alive.
func (s *Server) Running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Exited is closed when the current process has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Pid is the current process's id (prlimit execs the server in place).
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Kill ends the process with SIGKILL and waits for it.
func (s *Server) Kill() {
	s.t.Helper()
	if !s.Running() {
		s.t.Fatalf("kill: not running\nlog:\n%s", s.LastLog())
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// Signal sends sig to the process.
func (s *Server) Signal(sig os.Signal) error { return s.cmd.Process.Signal(sig) }

// Exit is how a process ended.
type Exit struct {
	Code int           // exit status; -1 when ended by a signal
	Took time.Duration // from the signal to the exit
}

// Terminate sends SIGTERM and waits up to d for the process to exit; past
// d it kills the process and fails the test.
func (s *Server) Terminate(d time.Duration) Exit {
	s.t.Helper()
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(d):
		s.cmd.Process.Kill()
		<-s.exited
		s.t.Fatalf("no exit within %v of SIGTERM\nlog:\n%s", d, s.LastLog())
	}
	return Exit{Code: s.cmd.ProcessState.ExitCode(), Took: time.Since(start)}
}

// Client returns a client of the server with its bootstrap key.
func (s *Server) Client() *Client { return NewClient(s.Addr, s.Key, func() string { return s.WS }) }

// Logs returns everything every run of the process has written.
func (s *Server) Logs() string { return s.logs.all() }

// LastLog returns what the current or last run has written.
func (s *Server) LastLog() string { return s.logs.last() }

// failedLogLines is how much of a server's log a failed test shows.
const failedLogLines = 200

// tail returns the last n lines of the current run's log, the API key
// masked.
func (s *Server) tail(n int) string {
	lines := strings.Split(strings.TrimRight(s.LastLog(), "\n"), "\n")
	out := strings.Join(lines[max(len(lines)-n, 0):], "\n")
	return strings.ReplaceAll(out, s.Key, "cpk_…")
}

// logSink keeps a process's output in memory and in a file per run.
type logSink struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	start int // where the current run begins in buf
	f     *os.File
}

// begin starts the log of a new run, written to f too.
func (l *logSink) begin(f *os.File) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.start, l.f = l.buf.Len(), f
}

// end closes the current run's file.
func (l *logSink) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// Write appends p.
func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Write(p)
	}
	return l.buf.Write(p)
}

// all returns the output of every run.
func (l *logSink) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// last returns the output of the current or last run.
func (l *logSink) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()[l.start:]
}
