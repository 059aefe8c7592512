package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/coppice-db/coppice/api"
	"github.com/coppice-db/coppice/engine"
)

// writeDocs makes the tests that produce the README's screenshots write
// them to ../docs: go test ./console -run 'TestRecordsGrid|TestSummaryChart' -docs
var writeDocs = flag.Bool("docs", false, "write the README's console screenshots to docs/")

// testKey is the bootstrap key of every test server.
const testKey = "cpk_console_test_0123456789abcdef"

// stepTimeout bounds each wait for the page; a test's whole budget is
// tabTimeout.
const (
	stepTimeout = 20 * time.Second
	tabTimeout  = 120 * time.Second
)

// chromiumPath finds the browser: $COPPICE_CHROMIUM, else Debian's
// chromium or another Chrome on the PATH.
func chromiumPath() string {
	if p := os.Getenv("COPPICE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// chromium is the one headless Chromium the tests share, with one tab
// that each test in turn uses (a new tab costs about a second). The tests
// do not run in parallel; current is the session the tab belongs to.
var chromium struct {
	once   sync.Once
	tab    context.Context
	cancel func()
	err    error

	mu      sync.Mutex
	current *session

	// netChanged counts the loads Chromium aborted because the host's
	// network changed (net::ERR_NETWORK_CHANGED): it aborts every load in
	// flight, loopback ones included, when any interface of the machine
	// comes, goes or changes address (a container starting elsewhere).
	netChanged atomic.Int64
}

// TestMain stops the shared browser after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if chromium.cancel != nil {
		chromium.cancel()
	}
	os.Exit(code)
}

// reportScript makes the page report every violation of its content
// security policy (Trusted Types included) to the test.
const reportScript = `document.addEventListener('securitypolicyviolation', (e) =>
	coppiceReport('CSP violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI + ' at ' + e.sourceFile + ':' + e.lineNumber));`

// startBrowser starts Chromium and its tab once, with the flags it needs
// to start quickly on a machine without network access: without QUIC,
// background networking, component updates and sync it would wait for
// the network. Exceptions, console errors and CSP violations in the page
// go to the current session.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("chromium not found: the browser tests need Debian's chromium (apt-get install chromium; `make test` installs it when it runs as root) or $COPPICE_CHROMIUM")
	}
	chromium.once.Do(func() {
		dir, err := os.MkdirTemp("", "coppice-chromium-")
		if err != nil {
			chromium.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("no-first-run", true),
			chromedp.UserDataDir(dir),
			chromedp.WindowSize(1280, 800),
		)
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		tab, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(pageEvent))
		chromium.tab = tab
		chromium.cancel = func() {
			cancelTab()
			cancelAlloc()
			os.RemoveAll(dir)
		}
		// The first Do starts the browser, bound to tab: no timeout here.
		chromium.err = chromedp.Do(tab,
			chromedp.ExposeFunc("coppiceReport", func(_ context.Context, msg string) (chromedp.Void, error) {
				report("%s", msg)
				return chromedp.Void{}, nil
			}),
			chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: reportScript})
				return err
			}),
		)
	})
	if chromium.err != nil {
		t.Fatalf("start chromium (%s): %v", path, chromium.err)
	}
	return chromium.tab
}

// pageEvent reports the page's exceptions and console errors, and counts
// the loads a network change aborted.
func pageEvent(ev any) {
	switch e := ev.(type) {
	case *network.EventLoadingFailed:
		if e.ErrorText == netChangedError {
			chromium.netChanged.Add(1)
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		report("exception at %s:%d: %s", d.URL, d.LineNumber+1, msg)
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			report("console.error: %s", strings.Join(args, " "))
		}
	}
}

// report records a problem of the page for the current session.
func report(format string, args ...any) {
	chromium.mu.Lock()
	defer chromium.mu.Unlock()
	if s := chromium.current; s != nil {
		s.problems = append(s.problems, fmt.Sprintf(format, args...))
	}
}

// session is one test's server and its use of the browser tab.
type session struct {
	t        *testing.T
	ctx      context.Context // the tab, with the test's deadline
	url      string          // http://127.0.0.1:port
	ws       string          // the bootstrap workspace's id
	userID   string
	shots    string   // directory for screenshots
	problems []string // exceptions, console errors and CSP violations; under chromium.mu
}

// newSession starts a server on a loopback port over a fresh data
// directory and takes the browser tab at width × height. At the end it
// saves a screenshot and fails the test if the page threw an exception,
// logged an error or violated the content security policy.
func newSession(t *testing.T, width, height int64) *session {
	t.Helper()
	tab := startBrowser(t)
	s := &session{t: t, shots: t.ArtifactDir()}
	s.startServer()
	ctx, cancel := context.WithTimeout(tab, tabTimeout)
	s.ctx = ctx
	chromium.mu.Lock()
	chromium.current = s
	chromium.mu.Unlock()
	t.Cleanup(func() {
		s.screenshot("final")
		// Leave the page before the server stops, so that nothing it
		// still does is reported to the next test.
		blank, cancelBlank := context.WithTimeout(tab, stepTimeout)
		defer cancelBlank()
		if err := chromedp.Do(blank, chromedp.Navigate("about:blank")); err != nil {
			t.Errorf("leave the page: %v", err)
		}
		cancel()
		chromium.mu.Lock()
		defer chromium.mu.Unlock()
		chromium.current = nil
		for _, p := range s.problems {
			t.Errorf("page: %s", p)
		}
	})
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatalf("set the viewport: %v", err)
	}
	return s
}

// startServer runs the real server (package api) over a fresh engine.
func (s *session) startServer() {
	t := s.t
	eng, err := engine.Open(t.TempDir(), engine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	info, err := api.Bootstrap(eng, testKey)
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	srv, err := api.New(eng, api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	ln := &trackingListener{Listener: inner, conns: map[net.Conn]struct{}{}}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- srv.Shutdown(ctx) }()
		// The page has left and the test's own requests are answered, so
		// the browser's connections carry nothing: close them. fasthttp
		// waits for a connection that has not sent its first request
		// until the client closes it, and the browser opens such
		// connections ahead of need.
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
	wait:
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("shutdown: %v", err)
				}
				break wait
			case <-tick.C:
				ln.closeConns()
			}
		}
		ln.Close()
		<-served
		if err := eng.Close(); err != nil {
			t.Errorf("close engine: %v", err)
		}
	})
	s.url = "http://" + ln.Addr().String()
	s.ws = info.WorkspaceID
	s.userID = info.UserID
}

// trackingListener remembers the connections it accepted, for the end
// of a test to close them.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// Accept accepts a connection and remembers it.
func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns[c] = struct{}{}
		l.mu.Unlock()
	}
	return c, err
}

// closeConns closes every accepted connection.
func (l *trackingListener) closeConns() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.Close()
		delete(l.conns, c)
	}
}

// call sends an API request with the bootstrap key (or key) and decodes
// the JSON answer.
func (s *session) call(method, path string, body any) (int, map[string]any) {
	return s.callWith(testKey, method, path, body)
}

// callWith sends an API request with key.
func (s *session) callWith(key, method, path string, body any) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			s.t.Fatalf("%s %s: %d %s: %v", method, path, res.StatusCode, raw, err)
		}
	}
	return res.StatusCode, out
}

// must sends an API request that has to answer want.
func (s *session) must(want int, method, path string, body any) map[string]any {
	s.t.Helper()
	got, out := s.call(method, path, body)
	if got != want {
		s.t.Fatalf("%s %s: status %d, want %d: %v", method, path, got, want, out)
	}
	return out
}

// data is the data-plane path of a branch.
func (s *session) data(db, branch string) string {
	return "/ws/" + s.ws + "/db/" + db + ":" + branch
}

// do runs browser actions, failing the test on error.
func (s *session) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	if err := chromedp.Do(s.ctx, actions...); err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

// js quotes a Go string as a JavaScript string literal.
func js(v string) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// evalJS evaluates a JavaScript expression and decodes its value as T.
func evalJS[T any](s *session, expr string) T {
	s.t.Helper()
	v, err := chromedp.Run(s.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		s.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until the JavaScript expression is true; an expression
// that throws counts as false.
func (s *session) waitJS(what, expr string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, stepTimeout+time.Second)
	defer cancel()
	changes := chromium.netChanged.Load()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](`(() => { try { return !!(`+expr+`); } catch (e) { return false; } })()`,
		chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout)))
	if err != nil {
		state, _ := chromedp.Run(s.ctx, chromedp.Evaluate[string](`location.href + '\n' + document.body.innerText.slice(0, 2000)`))
		if n := chromium.netChanged.Load() - changes; n > 0 {
			state += fmt.Sprintf("\n(meanwhile a change in the host's network aborted %d loads: %s)", n, netChangedError)
		}
		s.t.Fatalf("waiting for %s: %v\npage: %s", what, err, state)
	}
}

// waitText waits until the element sel exists and its text contains want.
func (s *session) waitText(sel, want string) {
	s.t.Helper()
	s.waitJS(fmt.Sprintf("%s to show %q", sel, want),
		fmt.Sprintf(`(() => { const el = document.querySelector(%s); return !!el && el.textContent.includes(%s); })()`, js(sel), js(want)))
}

// waitFor waits until an element matches sel.
func (s *session) waitFor(sel string) {
	s.t.Helper()
	s.waitJS(sel, fmt.Sprintf(`!!document.querySelector(%s)`, js(sel)))
}

// readyJS is true once the console finished rendering a view.
const readyJS = `document.readyState === 'complete' && document.getElementById('main').getAttribute('aria-busy') === 'false'`

// ready waits until the console finished rendering a view.
func (s *session) ready() {
	s.t.Helper()
	s.waitJS("the view", readyJS)
}

// rerendered runs action, which makes the console render the view again,
// and waits for the new rendering: the view's old nodes are marked first.
func (s *session) rerendered(action func()) {
	s.t.Helper()
	evalJS[int](s, `(() => { const old = document.querySelectorAll('#main > *'); old.forEach((e) => { e.dataset.stale = '1'; }); return old.length; })()`)
	action()
	s.waitJS("the view rendered again", `!document.querySelector('#main > [data-stale]') && document.getElementById('main').getAttribute('aria-busy') === 'false'`)
}

// text returns the text of the first element matching sel ("" if none).
func (s *session) text(sel string) string {
	s.t.Helper()
	return evalJS[string](s, fmt.Sprintf(`(document.querySelector(%s) || {}).textContent || ''`, js(sel)))
}

// count returns how many elements match sel.
func (s *session) count(sel string) int {
	s.t.Helper()
	return evalJS[int](s, fmt.Sprintf(`document.querySelectorAll(%s).length`, js(sel)))
}

// click clicks the first element matching sel.
func (s *session) click(sel string) {
	s.t.Helper()
	s.waitFor(sel)
	s.do("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// fill replaces the value of the input sel with value, by typing it.
func (s *session) fill(sel, value string) {
	s.t.Helper()
	s.waitFor(sel)
	evalJS[string](s, fmt.Sprintf(`document.querySelector(%s).value = ''`, js(sel)))
	s.do("fill "+sel, chromedp.SendKeys(chromedp.CSS(sel), value))
}

// choose selects value in the <select> sel and fires its change event.
func (s *session) choose(sel, value string) {
	s.t.Helper()
	s.waitFor(sel)
	got := evalJS[string](s, fmt.Sprintf(`(() => { const el = document.querySelector(%s); el.value = %s;
		el.dispatchEvent(new Event('change', {bubbles: true})); return el.value; })()`, js(sel), js(value)))
	if got != value {
		s.t.Fatalf("%s has no option %q", sel, value)
	}
}

// keys sends key presses to the focused element.
func (s *session) keys(keys ...string) {
	s.t.Helper()
	for _, k := range keys {
		s.do("key", chromedp.KeyEvent(k))
	}
}

// netChangedError is how Chromium fails a load that a change in the
// host's network aborted.
const netChangedError = "net::ERR_NETWORK_CHANGED"

// open loads a console URL (path after the host) in the tab and waits
// for its view. A load that a change in the host's network aborted (the
// page itself, or a script it needs) is no answer of the server's: the
// page is loaded again, for up to stepTimeout, and what the aborted
// attempts made the page report is dropped.
func (s *session) open(path string) {
	s.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		changes := chromium.netChanged.Load()
		chromium.mu.Lock()
		reported := len(s.problems)
		chromium.mu.Unlock()
		err := chromedp.Do(s.ctx, chromedp.Navigate(s.url+path))
		var le *chromedp.LoadError
		if errors.As(err, &le) && le.ErrorText == netChangedError {
			chromium.netChanged.Add(1)
		}
		if err == nil {
			err = s.until(readyJS, func() bool { return chromium.netChanged.Load() != changes })
		}
		if err == nil {
			return
		}
		if chromium.netChanged.Load() == changes || time.Now().After(deadline) {
			s.t.Fatalf("open %s: %v", path, err)
		}
		s.t.Logf("open %s: a change in the host's network aborted a load (%v); loading it again", path, err)
		chromium.mu.Lock()
		s.problems = s.problems[:reported]
		chromium.mu.Unlock()
	}
}

// until polls the JavaScript expression until it is true, and fails
// after stepTimeout, or at once when stop returns true.
func (s *session) until(expr string, stop func() bool) error {
	deadline := time.Now().Add(stepTimeout)
	for {
		ok, err := chromedp.Run(s.ctx, chromedp.Evaluate[bool](`(() => { try { return !!(`+expr+`); } catch (e) { return false; } })()`))
		switch {
		case err != nil:
			return err
		case ok:
			return nil
		case stop():
			return errors.New("stopped waiting for " + expr)
		case time.Now().After(deadline):
			return errors.New("timed out waiting for " + expr)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// location returns the tab's path and query.
func (s *session) location() string {
	s.t.Helper()
	return evalJS[string](s, `location.pathname + location.search`)
}

// signIn signs in with key on the sign-in form (the key pasted, not
// typed: TestSignInAndOut types one).
func (s *session) signIn(key string) {
	s.t.Helper()
	s.open("/console/")
	s.waitFor("#api-key")
	evalJS[string](s, fmt.Sprintf(`document.querySelector('#api-key').value = %s`, js(key)))
	s.click(`form.signin button[type=submit]`)
	s.waitFor("#workspaces")
	s.ready()
}

// screenshot saves the tab's viewport as name.png in the test's output
// directory.
func (s *session) screenshot(name string) []byte {
	ctx, cancel := context.WithTimeout(s.ctx, stepTimeout)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		s.t.Logf("screenshot %s: %v", name, err)
		return nil
	}
	p := filepath.Join(s.shots, name+".png")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		s.t.Errorf("save screenshot: %v", err)
	}
	return buf
}

// docShot saves a screenshot for the README when -docs is set.
func (s *session) docShot(name string) {
	buf := s.screenshot(name)
	if !*writeDocs || buf == nil {
		return
	}
	if err := os.WriteFile(filepath.Join("..", "docs", name+".png"), buf, 0o644); err != nil {
		s.t.Fatalf("write docs screenshot: %v", err)
	}
}
