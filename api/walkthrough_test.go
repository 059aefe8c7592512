package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The README's "Walk-through" section is a shell session with curl. It is
// written for readers, so this test reads it as a small subset of the shell
// rather than the README being written for the test:
//
//   - NAME=word assigns a variable; NAME=$(curl … | jq -r .path) assigns a
//     field of a curl response;
//   - curl [-s] [-X method] [-H header]… [-d data]… url sends a request;
//   - a command ends with `# → status`, the status it must answer;
//   - comment lines `# {…}` right under a command show its response trimmed
//     with `…`: every complete "key":value pair they show must occur in the
//     response.
//
// Words follow the shell: single quotes are literal, double quotes expand
// $NAME and ${NAME}, a quote may span lines, and a trailing backslash
// continues a line. Anything outside this subset fails the test, so the
// README cannot grow a command the test silently skips.

// walkthroughAddr is the address of `make run` that the session talks to;
// the test sends its requests to the test server instead.
const walkthroughAddr = "127.0.0.1:8080"

// TestWalkthrough runs the README's walk-through against a real server.
func TestWalkthrough(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := parseWalkthrough(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, Options{})
	// The variables a reader gets from the first start; an assignment to
	// one of them in the README is a placeholder the test keeps its value
	// for.
	fixed := map[string]string{
		"COPPICE_BOOTSTRAP_KEY": testKey,
		"WS":                    ts.info.WorkspaceID,
	}
	vars := map[string]string{}
	for k, v := range fixed {
		vars[k] = v
	}
	requests := 0
	for _, st := range steps {
		words, err := shellWords(st.code, vars)
		if err != nil {
			t.Fatalf("README line %d: %v", st.line, err)
		}
		if st.assign != "" {
			if len(words) != 1 || !strings.HasPrefix(words[0].text, st.assign+"=") {
				t.Fatalf("README line %d: an assignment is one word: %s", st.line, st.code)
			}
			if _, ok := fixed[st.assign]; !ok {
				vars[st.assign] = strings.TrimPrefix(words[0].text, st.assign+"=")
			}
			continue
		}
		cmd, jqPath, err := splitPipeline(words)
		if err != nil {
			t.Fatalf("README line %d: %v", st.line, err)
		}
		req, err := curlRequest(cmd, ts.addr)
		if err != nil {
			t.Fatalf("README line %d: %v", st.line, err)
		}
		if st.status == 0 {
			t.Fatalf("README line %d: the command states no status (end it with `# → 200`)", st.line)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("README line %d: %s %s: %v", st.line, req.Method, req.URL, err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		requests++
		what := fmt.Sprintf("README line %d: %s %s", st.line, req.Method, req.URL.Path)
		if resp.StatusCode != st.status {
			t.Fatalf("%s: status %d, README says %d; body %s", what, resp.StatusCode, st.status, raw)
		}
		for _, shown := range st.shown {
			for _, pair := range shownPairs(shown) {
				if !strings.Contains(string(raw), pair) {
					t.Errorf("%s: the README shows %s, the response is %s", what, pair, raw)
				}
			}
		}
		if st.capture != "" {
			v, err := jqField(raw, jqPath)
			if err != nil {
				t.Fatalf("%s: jq %s: %v", what, jqPath, err)
			}
			vars[st.capture] = v
		}
	}
	if requests < 10 {
		t.Fatalf("the walk-through sent %d requests; is the README section still there?", requests)
	}
}

// walkStep is one logical line of the session: an assignment or a command.
type walkStep struct {
	line    int    // first README line, for messages
	code    string // the shell text without the trailing comment
	assign  string // NAME of NAME=word; the whole code is the word
	capture string // NAME of NAME=$(…); code is the command inside
	status  int    // from `# → status`; 0 when absent
	shown   []string
}

// Patterns of a step: the status comment and an assignment's NAME=.
var (
	statusComment = regexp.MustCompile(`^→\s*(\d{3})$`)
	assignPrefix  = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=`)
)

// parseWalkthrough returns the steps of the fenced sh blocks of the README
// section "Walk-through".
func parseWalkthrough(readme string) ([]walkStep, error) {
	lines := strings.Split(readme, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "## Walk-through" {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("README has no section \"## Walk-through\"")
	}
	var steps []walkStep
	inBlock := false
	var pending []string // lines of an unfinished logical line
	pendingAt := 0
	for i := start; i < len(lines); i++ {
		l := lines[i]
		if !inBlock && strings.HasPrefix(l, "## ") {
			break
		}
		if strings.HasPrefix(l, "```") {
			if inBlock && pending != nil {
				return nil, fmt.Errorf("README line %d: unfinished command at the end of a block", pendingAt)
			}
			inBlock = !inBlock && (strings.TrimSpace(l) == "```sh" || strings.TrimSpace(l) == "```shell")
			continue
		}
		if !inBlock {
			continue
		}
		if pending == nil {
			t := strings.TrimSpace(l)
			if t == "" {
				continue
			}
			if strings.HasPrefix(t, "#") {
				// A response under the previous command, or prose.
				if c := strings.TrimSpace(strings.TrimPrefix(t, "#")); len(steps) > 0 &&
					(strings.HasPrefix(c, "{") || strings.HasPrefix(c, "[")) {
					steps[len(steps)-1].shown = append(steps[len(steps)-1].shown, c)
				}
				continue
			}
			pendingAt = i + 1
		}
		pending = append(pending, l)
		code, comment, open, err := splitComment(strings.Join(pending, "\n"))
		if err != nil {
			return nil, fmt.Errorf("README line %d: %v", pendingAt, err)
		}
		if open {
			continue
		}
		if strings.HasSuffix(strings.TrimRight(code, " \t"), "\\") {
			// The shell drops a backslash-newline; keep the words apart.
			pending[len(pending)-1] = strings.TrimSuffix(strings.TrimRight(l, " \t"), "\\") + " "
			continue
		}
		pending = nil
		st, err := newStep(pendingAt, strings.TrimSpace(code), strings.TrimSpace(comment))
		if err != nil {
			return nil, err
		}
		steps = append(steps, st)
	}
	if pending != nil {
		return nil, fmt.Errorf("README line %d: unfinished command", pendingAt)
	}
	return steps, nil
}

// newStep classifies one logical line.
func newStep(line int, code, comment string) (walkStep, error) {
	st := walkStep{line: line, code: code}
	if m := statusComment.FindStringSubmatch(comment); m != nil {
		st.status, _ = strconv.Atoi(m[1])
	}
	m := assignPrefix.FindStringSubmatch(code)
	if m == nil {
		return st, nil
	}
	rest := code[len(m[0]):]
	if inner, ok := strings.CutPrefix(rest, "$("); ok {
		inner, ok = strings.CutSuffix(inner, ")")
		if !ok {
			return st, fmt.Errorf("README line %d: $( without its closing parenthesis", line)
		}
		st.capture, st.code = m[1], inner
		return st, nil
	}
	if st.status != 0 {
		return st, fmt.Errorf("README line %d: a status on an assignment", line)
	}
	st.assign = m[1]
	return st, nil
}

// splitComment splits shell text at its comment: a # that starts a word
// outside quotes. open reports a quote still open at the end.
func splitComment(s string) (code, comment string, open bool, err error) {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case quote == '"':
			if c == '\\' {
				i++
			} else if c == '"' {
				quote = 0
			}
		case c == '\\':
			i++
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == '\n'):
			return s[:i], s[i+1:], false, nil
		}
	}
	return s, "", quote != 0, nil
}

// shellWord is a word of a command; op marks an unquoted operator (|).
type shellWord struct {
	text string
	op   bool
}

// shellWords splits shell text into words, expanding variables outside
// single quotes. Unknown variables and shell syntax beyond the subset are
// errors.
func shellWords(s string, vars map[string]string) ([]shellWord, error) {
	var (
		words []shellWord
		cur   strings.Builder
		in    bool // a word is started, possibly empty ('')
	)
	flush := func() {
		if in {
			words = append(words, shellWord{text: cur.String()})
		}
		cur.Reset()
		in = false
	}
	expand := func(i int) (int, error) { // s[i] == '$'
		rest := s[i+1:]
		if strings.HasPrefix(rest, "{") {
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return 0, fmt.Errorf("${ without }")
			}
			name := rest[1:end]
			v, ok := vars[name]
			if !ok {
				return 0, fmt.Errorf("unknown variable %s", name)
			}
			cur.WriteString(v)
			return i + 1 + end, nil
		}
		n := 0
		for n < len(rest) && (rest[n] == '_' || rest[n] >= 'a' && rest[n] <= 'z' || rest[n] >= 'A' && rest[n] <= 'Z' ||
			n > 0 && rest[n] >= '0' && rest[n] <= '9') {
			n++
		}
		if n == 0 {
			return 0, fmt.Errorf("unsupported shell syntax at %q", s[i:])
		}
		v, ok := vars[rest[:n]]
		if !ok {
			return 0, fmt.Errorf("unknown variable %s", rest[:n])
		}
		cur.WriteString(v)
		return i + n, nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n':
			flush()
		case '|':
			flush()
			words = append(words, shellWord{text: "|", op: true})
		case ';', '&', '<', '>', '`', '(', ')', '*', '?', '[', '~':
			return nil, fmt.Errorf("unsupported shell syntax %q (quote it)", c)
		case '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
				in = true
			}
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			in = true
			i += end + 1
		case '"':
			in = true
			for i++; ; i++ {
				if i >= len(s) {
					return nil, fmt.Errorf("unterminated double quote")
				}
				if s[i] == '"' {
					break
				}
				switch {
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0:
					i++
					cur.WriteByte(s[i])
				case s[i] == '$':
					var err error
					if i, err = expand(i); err != nil {
						return nil, err
					}
				case s[i] == '`':
					return nil, fmt.Errorf("unsupported command substitution")
				default:
					cur.WriteByte(s[i])
				}
			}
		case '$':
			var err error
			if i, err = expand(i); err != nil {
				return nil, err
			}
			in = true
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	return words, nil
}

// splitPipeline returns the curl command and, for `curl … | jq -r PATH`,
// the jq path.
func splitPipeline(words []shellWord) (cmd []string, jqPath string, err error) {
	i := 0
	for ; i < len(words) && !words[i].op; i++ {
		cmd = append(cmd, words[i].text)
	}
	if i == len(words) {
		return cmd, "", nil
	}
	rest := words[i+1:]
	if len(rest) != 3 || rest[0].text != "jq" || rest[1].text != "-r" || rest[2].op {
		return nil, "", fmt.Errorf("the only pipe supported is `| jq -r .path`")
	}
	return cmd, rest[2].text, nil
}

// curlRequest builds the request a curl command line sends, aimed at addr
// instead of walkthroughAddr.
func curlRequest(args []string, addr string) (*http.Request, error) {
	if len(args) == 0 || args[0] != "curl" {
		return nil, fmt.Errorf("not a curl command: %q", args)
	}
	var (
		method, target string
		headers        [][2]string
		data           []string
		hasData        bool
	)
	for i := 1; i < len(args); i++ {
		a := args[i]
		next := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("curl %s needs an argument", a)
			}
			i++
			return args[i], nil
		}
		var err error
		switch a {
		case "-s", "--silent", "-S", "--show-error", "-sS":
		case "-X", "--request":
			method, err = next()
		case "-H", "--header":
			var h string
			if h, err = next(); err == nil {
				name, value, ok := strings.Cut(h, ":")
				if !ok {
					return nil, fmt.Errorf("curl header %q has no colon", h)
				}
				headers = append(headers, [2]string{strings.TrimSpace(name), strings.TrimSpace(value)})
			}
		case "-d", "--data", "--data-raw", "--data-binary":
			var d string
			if d, err = next(); err == nil {
				if a != "--data-raw" && strings.HasPrefix(d, "@") {
					return nil, fmt.Errorf("curl %s @file is not supported", a)
				}
				data, hasData = append(data, d), true
			}
		default:
			if strings.HasPrefix(a, "-") {
				return nil, fmt.Errorf("curl option %s is not supported here", a)
			}
			if target != "" {
				return nil, fmt.Errorf("curl with two URLs: %s and %s", target, a)
			}
			target = a
		}
		if err != nil {
			return nil, err
		}
	}
	if target == "" {
		return nil, fmt.Errorf("curl without a URL")
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" || u.Host != walkthroughAddr {
		return nil, fmt.Errorf("the walk-through talks to http://%s (make run), not %s", walkthroughAddr, target)
	}
	u.Host = addr
	if method == "" {
		method = "GET"
		if hasData {
			method = "POST"
		}
	}
	var body io.Reader
	if hasData {
		body = strings.NewReader(strings.Join(data, "&"))
	}
	req, err := http.NewRequest(method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if hasData {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded") // as curl -d does
	}
	for _, h := range headers {
		req.Header.Set(h[0], h[1])
	}
	return req, nil
}

// shownPair matches a "key":value pair with a scalar value in a trimmed
// response; pairs whose value holds … are elided and not checked.
var shownPair = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null)`)

// shownPairs returns the complete pairs of a shown response, as the
// server's compact JSON spells them.
func shownPairs(shown string) []string {
	var out []string
	for _, m := range shownPair.FindAllStringSubmatch(shown, -1) {
		if strings.Contains(m[2], "…") {
			continue
		}
		out = append(out, `"`+m[1]+`":`+m[2])
	}
	return out
}

// jqField is `jq -r PATH` for a path of object keys (.a.b): a string comes
// out unquoted.
func jqField(raw []byte, path string) (string, error) {
	if !strings.HasPrefix(path, ".") {
		return "", fmt.Errorf("unsupported jq path %q", path)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	for _, k := range strings.Split(path[1:], ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("no object at %q", k)
		}
		if v, ok = m[k]; !ok {
			return "", fmt.Errorf("no key %q", k)
		}
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// TestWalkthroughParser checks the shell subset on the cases the README
// relies on.
func TestWalkthroughParser(t *testing.T) {
	vars := map[string]string{"A": "x y", "B": "b"}
	f := func(in string, want ...string) {
		t.Helper()
		words, err := shellWords(in, vars)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		var got []string
		for _, w := range words {
			got = append(got, w.text)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
	f(`curl -s "$A/${B}c" -d '{"$x":1}'`, "curl", "-s", "x y/bc", "-d", `{"$x":1}`)
	f(`K=$B`, "K=b")
	f(`a\ b "q\"$B" ''`, "a b", `q"b`, "")
	f("x 'multi\nline'", "x", "multi\nline")
	f(`curl u | jq -r .id`, "curl", "u", "|", "jq", "-r", ".id")
	for _, bad := range []string{`$NOPE`, `a; b`, `"open`, "x *", "a `b`"} {
		if _, err := shellWords(bad, vars); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}

	steps, err := parseWalkthrough("## Walk-through\n\n```sh\nX=1   # a comment\n" +
		"curl -s \"$U\" \\\n  -d '{\n\"a\":1}'   # → 201\n# {\"a\":1,\"b\":\"…\"}\n" +
		"V=$(curl -s \"$U\" | jq -r .id)  # → 200\n```\n\n## Next\n```sh\ncurl nope\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 {
		t.Fatalf("steps %+v", steps)
	}
	if s := steps[0]; s.assign != "X" || s.code != "X=1" || s.status != 0 {
		t.Errorf("assignment %+v", s)
	}
	if s := steps[1]; s.status != 201 || s.line != 5 || len(s.shown) != 1 || !strings.Contains(s.code, "'{\n\"a\":1}'") {
		t.Errorf("command %+v", s)
	}
	if got := shownPairs(steps[1].shown[0]); len(got) != 1 || got[0] != `"a":1` {
		t.Errorf("shown pairs %q", got)
	}
	if s := steps[2]; s.capture != "V" || s.status != 200 || s.code != `curl -s "$U" | jq -r .id` {
		t.Errorf("capture %+v", s)
	}
}
