package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Client sends requests to a server with an API key. It is safe for
// concurrent use. Every response it receives is shown to its Secrets, when
// set, before it is returned.
type Client struct {
	Addr    string
	Key     string
	HTTP    *http.Client
	Secrets *Secrets
	ws      func() string
}

// NewClient returns a client of the server at addr with key; ws gives the
// workspace that paths starting with /db are sent below.
func NewClient(addr, key string, ws func() string) *Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Client{Addr: addr, Key: key, HTTP: &http.Client{Transport: tr, Timeout: 2 * time.Minute}, ws: ws}
}

// Response is a response read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// String is the status and the start of the body, for test messages.
func (r Response) String() string {
	b := r.Body
	if len(b) > 300 {
		b = b[:300]
	}
	return fmt.Sprintf("%d %s", r.Status, b)
}

// Do sends a request. A path starting with /db goes below the workspace
// (/ws/{id}/db/...). body is sent as is when it is a []byte or string, as
// JSON otherwise, and not at all when nil.
func (c *Client) Do(method, path string, body any) (Response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return Response{}, err
		}
		rd = bytes.NewReader(j)
	}
	if strings.HasPrefix(path, "/db") && c.ws != nil {
		path = "/ws/" + c.ws() + path
	}
	req, err := http.NewRequest(method, "http://"+c.Addr+path, rd)
	if err != nil {
		return Response{}, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	r := Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	if c.Secrets != nil {
		c.Secrets.CheckResponse(method+" "+path, r)
	}
	return r, err
}

// Must sends a request and returns its response, or an error when it fails
// or its status is not want.
func (c *Client) Must(want int, method, path string, body any) (Response, error) {
	r, err := c.Do(method, path, body)
	if err == nil && r.Status != want {
		err = fmt.Errorf("%s %s: %s, want %d", method, path, r, want)
	}
	return r, err
}

// Secrets is a set of secret values (API keys, Authorization header
// values) that no log line or response may contain, and what was found
// where. It is safe for concurrent use.
type Secrets struct {
	mu      sync.Mutex
	values  []string
	checked int
	bytes   int64
	found   []string
}

// Add adds secret values.
func (s *Secrets) Add(v ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values = append(s.values, v...)
}

// Check looks for every secret in data, which came from where.
func (s *Secrets) Check(where string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checked++
	s.bytes += int64(len(data))
	for _, v := range s.values {
		if i := bytes.Index(data, []byte(v)); i >= 0 {
			lo, hi := max(0, i-80), min(len(data), i+len(v)+40)
			s.found = append(s.found, fmt.Sprintf("%s: %q", where, data[lo:hi]))
		}
	}
}

// CheckResponse looks for every secret in a response's headers and body.
func (s *Secrets) CheckResponse(where string, r Response) {
	var b bytes.Buffer
	r.Header.Write(&b)
	b.Write(r.Body)
	s.Check(where, b.Bytes())
}

// Stats returns how many texts and bytes were checked and where secrets
// were found.
func (s *Secrets) Stats() (texts int, bytes int64, found []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checked, s.bytes, append([]string(nil), s.found...)
}
