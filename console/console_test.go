package console_test

import (
	"io"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/coppice-db/coppice/console"
)

// get fetches a URL of the session's server without a key.
func (s *session) get(method, path string, header ...string) (*http.Response, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// TestConsoleHeaders checks what the server sends for the console: pages
// and assets with a strict content security policy, nosniff and no
// framing; every console path answers the page; unknown assets 404.
func TestConsoleHeaders(t *testing.T) {
	s := &session{t: t}
	s.startServer()
	security := func(path string, res *http.Response) {
		t.Helper()
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "require-trusted-types-for 'script'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %s", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q allows unsafe sources", path, csp)
		}
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", path, got)
		}
		if got := res.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("%s: X-Frame-Options %q", path, got)
		}
		if got := res.Header.Get("Referrer-Policy"); got != "no-referrer" {
			t.Errorf("%s: Referrer-Policy %q", path, got)
		}
	}
	for _, p := range []string{"/console", "/console/", "/console/w/abc123/d/app/b/main/t/people?filter=%7B%7D", "//console//w/x"} {
		res, body := s.get("GET", p)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(body, `<script type="module" src="/console/static/js/app.js">`) {
			t.Errorf("GET %s: %d %s", p, res.StatusCode, res.Header.Get("Content-Type"))
		}
		security(p, res)
	}
	for p, ct := range map[string]string{
		"/console/static/js/app.js":   "text/javascript; charset=utf-8",
		"/console/static/console.css": "text/css; charset=utf-8",
		"/console/static/icon.svg":    "image/svg+xml",
	} {
		res, body := s.get("GET", p)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != ct || body == "" {
			t.Errorf("GET %s: %d %q", p, res.StatusCode, res.Header.Get("Content-Type"))
		}
		security(p, res)
		etag := res.Header.Get("ETag")
		if res, _ := s.get("GET", p, "If-None-Match", etag); etag == "" || res.StatusCode != 304 {
			t.Errorf("GET %s with its ETag: %d", p, res.StatusCode)
		}
	}
	for _, p := range []string{"/console/static/nope.js", "/console/static/js/../console.css", "/console/static/"} {
		res, body := s.get("GET", p)
		if res.StatusCode != 404 || !strings.Contains(body, `"message"`) {
			t.Errorf("GET %s: %d %s", p, res.StatusCode, body)
		}
		security(p, res)
	}
	if res, _ := s.get("POST", "/console/"); res.StatusCode != 405 {
		t.Errorf("POST /console/: %d", res.StatusCode)
	}
	if res, _ := s.get("HEAD", "/console/"); res.StatusCode != 200 {
		t.Errorf("HEAD /console/: %d", res.StatusCode)
	}
	// The API is not the console: no page there, and /consoles is no route.
	if res, _ := s.get("GET", "/consoles"); res.StatusCode != 404 {
		t.Errorf("GET /consoles: %d", res.StatusCode)
	}
	if res, _ := s.get("GET", "/healthz"); res.StatusCode != 200 || res.Header.Get("Content-Security-Policy") != "" {
		t.Errorf("GET /healthz: %d", res.StatusCode)
	}
}

// TestAssetsAvoidHTMLSinks reads the console's files: no inline script or
// style attribute in the page, and no script that parses strings as HTML
// or code, so values can only ever become text.
func TestAssetsAvoidHTMLSinks(t *testing.T) {
	files := console.Files()
	page, err := fs.ReadFile(files, console.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`<script(?:[^>](?:[^s]|s[^r]|sr[^c]))*>`, `\sstyle\s*=`, `\son[a-z]+\s*=`, `<style`} {
		if m := regexp.MustCompile(re).Find(page); m != nil {
			t.Errorf("index.html has %q (%s)", m, re)
		}
	}
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\(\s*['"]style|\.style\b|srcdoc|createContextualFragment|javascript:`)
	n := 0
	err = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		n++
		src, err := fs.ReadFile(files, p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if m := sinks.FindString(line); m != "" && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d uses %s", p, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("read %d scripts: the walk is broken", n)
	}
}
