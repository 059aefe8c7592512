package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// benchKey is the API key the suite bootstraps its servers with.
const benchKey = "bench-suite-key-0123456789abcdef"

// server is a `coppice serve` process on a loopback port, and a client
// that talks to it with the bootstrap key.
type server struct {
	cmd     *exec.Cmd
	addr    string
	metrics string // the address of its Prometheus endpoint
	dataDir string
	ws      string // public workspace id
	client  *fasthttp.HostClient
	exited  chan error
	// peakKB is VmHWM read just before the process was stopped.
	peakKB int64
	// cpuSource is where cpu reads the CPU time from; 0 until its first
	// call.
	cpuSource int
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startServer runs bin on dataDir and returns once the process has been
// started; ready waits until it answers.
func startServer(bin, dataDir, logPath string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--addr", addr, "--data", dataDir, "--log-level", "warn", "--metrics-addr", metrics)
	cmd.Env = append(os.Environ(), "COPPICE_BOOTSTRAP_KEY="+benchKey)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &server{
		cmd: cmd, addr: addr, metrics: metrics, dataDir: dataDir, exited: make(chan error, 1),
		client: &fasthttp.HostClient{
			Addr:                addr,
			MaxConns:            256,
			ReadTimeout:         5 * time.Minute,
			WriteTimeout:        time.Minute,
			MaxIdleConnDuration: time.Minute,
		},
	}
	go func() {
		s.exited <- cmd.Wait()
		logf.Close()
	}()
	return s, nil
}

// ready polls /healthz until it answers 200, then learns the workspace id.
func (s *server) ready(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		status, _, err := s.do("GET", "/healthz", nil)
		if err == nil && status == 200 {
			break
		}
		select {
		case err := <-s.exited:
			return fmt.Errorf("server exited before answering: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server not ready after %v: %v", timeout, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	status, body, err := s.do("GET", "/workspaces", nil)
	if err != nil || status != 200 {
		return fmt.Errorf("list workspaces: status %d, %v: %s", status, err, body)
	}
	var out struct {
		Workspaces []struct {
			ID string `json:"id"`
		} `json:"workspaces"`
	}
	if err := json.Unmarshal(body, &out); err != nil || len(out.Workspaces) == 0 {
		return fmt.Errorf("list workspaces: %v: %s", err, body)
	}
	s.ws = out.Workspaces[0].ID
	return nil
}

// settle waits, up to limit, until the server has had no compaction, no
// table waiting for its idle compaction (--compact-idle) and no build of
// an in-memory column store for two seconds in a row,
// so that a workload does not pay for the background work of the one
// before it. (The storage's estimated
// compaction debt is no guide: it stays in the hundreds of megabytes on a
// settled tree that no compaction is due for.) It returns how long it
// waited and whether the storage settled.
func (s *server) settle(limit time.Duration) (time.Duration, bool, error) {
	const poll, quietPolls = 250 * time.Millisecond, 8
	t0 := time.Now()
	quiet := 0
	for time.Since(t0) < limit {
		running, err := s.backgroundRunning()
		if err != nil {
			return time.Since(t0), false, err
		}
		if running == 0 {
			if quiet++; quiet == quietPolls {
				return time.Since(t0), true, nil
			}
		} else {
			quiet = 0
		}
		time.Sleep(poll)
	}
	return time.Since(t0), false, nil
}

// backgroundRunning reads from the server's metrics how many compactions
// and column-store builds are in progress, and how many idle compactions
// are pending.
func (s *server) backgroundRunning() (float64, error) {
	v, err := s.readMetrics("coppice_storage_compactions_in_progress", "coppice_store_builds_in_progress", "coppice_storage_idle_compactions_pending")
	if err != nil {
		return 0, err
	}
	return v[0] + v[1] + v[2], nil
}

// storageState is what the storage was doing at one moment.
type storageState struct {
	compactions, l0Files, debt float64
}

// String reads like "0 compactions running, 2 files in L0, compaction debt 152 MiB".
func (st storageState) String() string {
	return fmt.Sprintf("%.0f compactions running, %.0f files in L0, compaction debt %.0f MiB", st.compactions, st.l0Files, st.debt/(1<<20))
}

// storage reads from the server's metrics the compactions running, the
// files in L0 and the estimated compaction debt.
func (s *server) storage() (storageState, error) {
	v, err := s.readMetrics("coppice_storage_compactions_in_progress", `coppice_storage_level_files{level="0"}`, "coppice_storage_compaction_debt_bytes")
	if err != nil {
		return storageState{}, err
	}
	return storageState{compactions: v[0], l0Files: v[1], debt: v[2]}, nil
}

// readMetrics reads samples from the server's metrics, each named as the
// exposition names it (with its labels); every one must be there.
func (s *server) readMetrics(names ...string) ([]float64, error) {
	status, body, err := fasthttp.GetTimeout(nil, "http://"+s.metrics+"/metrics", 10*time.Second)
	if err != nil || status != 200 {
		return nil, fmt.Errorf("metrics: status %d, %v", status, err)
	}
	values := make([]float64, len(names))
	found := 0
	for line := range strings.Lines(string(body)) {
		for i, name := range names {
			if value, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
				v, err := strconv.ParseFloat(value, 64)
				if err != nil {
					return nil, fmt.Errorf("metrics: %s: %w", name, err)
				}
				values[i] = v
				found++
			}
		}
	}
	if found != len(names) {
		return nil, fmt.Errorf("metrics: %d of %v in %d bytes", found, names, len(body))
	}
	return values, nil
}

// gcCycles reads from the server's metrics how many garbage collections
// its Go runtime has completed; -1 when the metrics do not say.
func (s *server) gcCycles() float64 {
	v, err := s.readMetrics("go_gc_duration_seconds_count")
	if err != nil {
		return -1
	}
	return v[0]
}

// core returns the engine's workspace id: the part after the slug.
func (s *server) core() string { return s.ws[strings.LastIndexByte(s.ws, '-')+1:] }

// dataPath returns the data-plane path of a branch-relative path.
func (s *server) dataPath(db, branch, rest string) string {
	return "/ws/" + s.ws + "/db/" + db + ":" + branch + rest
}

// do sends one request and returns the status and a copy of the body.
func (s *server) do(method, path string, body []byte) (int, []byte, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	s.fill(req, method, path, body)
	if err := s.client.Do(req, resp); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), nil
}

// fill sets up req for the server.
func (s *server) fill(req *fasthttp.Request, method, path string, body []byte) {
	req.Header.SetMethod(method)
	req.SetRequestURI(path)
	req.URI().SetHost(s.addr)
	req.Header.Set("Authorization", "Bearer "+benchKey)
	if body != nil {
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(body)
	}
}

// call sends a request whose answer must have status want, and decodes the
// answer into out unless out is nil.
func (s *server) call(method, path string, body any, want int, out any) error {
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			return err
		}
	}
	status, resp, err := s.do(method, path, raw)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if status != want {
		return &statusError{method: method, path: path, status: status, body: trim(resp, 300)}
	}
	if out != nil {
		return json.Unmarshal(resp, out)
	}
	return nil
}

// statusError is an answer with an unexpected status.
type statusError struct {
	method, path string
	status       int
	body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: status %d: %s", e.method, e.path, e.status, e.body)
}

// statusOf returns the status of a statusError, or 0.
func statusOf(err error) int {
	var se *statusError
	if errors.As(err, &se) {
		return se.status
	}
	return 0
}

// trim returns b as text, cut after n bytes, for error messages.
func trim(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// clockTicks is the unit of the CPU times of /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTicks = 100

// cpu returns the CPU time the process has used so far, over all its
// threads; 0 when /proc cannot say. It sums the nanoseconds each thread
// spent on a CPU (/proc/<pid>/task/*/schedstat), precise enough for one
// request; where the kernel keeps no such count, it reads user and system
// time in clock ticks (/proc/<pid>/stat), meaningful over many requests
// only. The first call picks the source for the process's lifetime.
func (s *server) cpu() time.Duration {
	pid := strconv.Itoa(s.cmd.Process.Pid)
	if s.cpuSource == 0 {
		s.cpuSource = cpuFromStat
		if _, ok := threadsOnCPU(pid); ok {
			s.cpuSource = cpuFromSchedstat
		}
	}
	if s.cpuSource == cpuFromSchedstat {
		d, _ := threadsOnCPU(pid)
		return d
	}
	return ticksUsed(pid)
}

// Sources of server.cpu.
const (
	cpuFromSchedstat = 1 + iota
	cpuFromStat
)

// threadsOnCPU sums the time the threads of a process have run, from the
// first field of each thread's schedstat.
func threadsOnCPU(pid string) (time.Duration, bool) {
	dir := "/proc/" + pid + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(dir + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += ns
	}
	return time.Duration(sum), true
}

// ticksUsed reads the user and system time of a process from its stat.
func ticksUsed(pid string) time.Duration {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing parenthesis (state is field 3).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// peakRSS returns VmHWM of the process in kB.
func (s *server) peakRSS() int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/status")
	if err != nil {
		return s.peakKB
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// stop records the peak RSS, sends SIGTERM and waits for the process to
// drain and close its data directory.
func (s *server) stop() error {
	s.peakKB = s.peakRSS()
	s.client.CloseIdleConnections()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case err := <-s.exited:
		return err
	case <-time.After(2 * time.Minute):
		s.cmd.Process.Kill()
		return fmt.Errorf("server did not stop within 2 minutes; killed")
	}
}
