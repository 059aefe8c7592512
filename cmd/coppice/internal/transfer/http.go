package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// Retries of a request the server did not take: 429 and 503 answers, and
// connections that could not be made. Nothing else is retried, since a
// request that may have reached the server may also have been applied.
const (
	maxAttempts  = 8
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 5 * time.Second
	// maxRetryAfter caps the wait a Retry-After header asks for.
	maxRetryAfter = 30 * time.Second
	// requestTimeout bounds one request, so a server that stops answering
	// stops the transfer instead of hanging it.
	requestTimeout = 5 * time.Minute
	// maxResponse bounds the bytes of one response read into memory.
	maxResponse = 256 << 20
)

// httpStore calls the data plane of a server.
type httpStore struct {
	client  *http.Client
	streams *http.Client // for streams (stream.go): no bound on a whole request's time
	base    string       // server URL, with /ws/{workspace} when one is named
	key     string
	dbb     string // the escaped {db}:{branch} path segment
}

// newHTTPStore checks the URL and makes a client with conns connections
// kept open.
func newHTTPStore(t *Target, conns int) (*httpStore, error) {
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--url must be an http or https URL, got %q", t.URL)
	}
	if u.User != nil {
		return nil, errors.New("--url must not carry credentials: set the API key with COPPICE_API_KEY")
	}
	base := strings.TrimRight(u.String(), "/")
	if t.Workspace != "" {
		base += "/ws/" + url.PathEscape(t.Workspace)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conns + 1
	return &httpStore{
		client: &http.Client{Transport: tr, Timeout: requestTimeout}, streams: &http.Client{Transport: tr},
		base: base, key: t.APIKey,
		dbb: url.PathEscape(t.Database) + ":" + url.PathEscape(t.branch()),
	}, nil
}

// serverError is an answer that is neither success nor a refusal of
// records.
type serverError struct {
	status  int
	message string
}

// Error gives the status and the server's message.
func (e *serverError) Error() string {
	return fmt.Sprintf("server answered %d %s: %s", e.status, http.StatusText(e.status), e.message)
}

// newServerError reads the message of an error body.
func newServerError(status int, body []byte) *serverError {
	var b struct {
		Message string `json:"message"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &b) == nil && b.Message != "" {
		msg = b.Message
	}
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return &serverError{status: status, message: msg}
}

// do sends one request and reads the answer, retrying while the server
// refuses it for load or cannot be reached.
func (s *httpStore) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	wait := firstBackoff
	for attempt := 1; ; attempt++ {
		status, resp, retryAfter, err := s.once(ctx, method, path, body)
		if !retryable(status, err) || attempt == maxAttempts || !backoff(ctx, &wait, retryAfter) {
			return status, resp, err
		}
	}
}

// retryable reports whether a request the server did not take may be sent
// again: it was refused for load (429, 503), or it could not connect.
func retryable(status int, err error) bool {
	if err != nil {
		var op *net.OpError
		return errors.As(err, &op) && op.Op == "dial"
	}
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// backoff waits before the next attempt: the server's Retry-After, else
// *wait, which then doubles up to maxBackoff. It reports false when ctx
// ends first.
func backoff(ctx context.Context, wait *time.Duration, retryAfter time.Duration) bool {
	d := *wait
	if retryAfter > 0 {
		d = min(retryAfter, maxRetryAfter)
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return false
	}
	*wait = min(2**wait, maxBackoff)
	return true
}

// once sends one request. retryAfter is the server's Retry-After, if any.
func (s *httpStore) once(ctx context.Context, method, path string, body []byte) (status int, resp []byte, retryAfter time.Duration, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := s.client.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer res.Body.Close()
	resp, err = io.ReadAll(io.LimitReader(res.Body, maxResponse))
	if err != nil {
		return 0, nil, 0, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return res.StatusCode, resp, retryAfterOf(res), nil
}

// retryAfterOf is a response's Retry-After in seconds, or 0.
func retryAfterOf(res *http.Response) time.Duration {
	if secs, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	return 0
}

// call sends a JSON body (nil: none) and decodes a JSON answer of status
// want into out (nil: ignored).
func (s *httpStore) call(ctx context.Context, method, path string, in any, want int, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	status, resp, err := s.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	if status != want {
		return newServerError(status, resp)
	}
	if out == nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(resp))
	d.UseNumber()
	if err := d.Decode(out); err != nil {
		return fmt.Errorf("%s %s: unexpected answer: %w", method, path, err)
	}
	return nil
}

// tablePath is the path of a table's endpoints.
func (s *httpStore) tablePath(table string) string {
	return "/db/" + s.dbb + "/tables/" + url.PathEscape(table)
}

// tables reads the schema of the branch details.
func (s *httpStore) tables(ctx context.Context) ([]tableDef, error) {
	var details struct {
		Schema struct {
			Tables []tableDef `json:"tables"`
		} `json:"schema"`
	}
	if err := s.call(ctx, "GET", "/db/"+s.dbb, nil, http.StatusOK, &details); err != nil {
		return nil, err
	}
	return details.Schema.Tables, nil
}

// createTable creates the table, then sets its columns.
func (s *httpStore) createTable(ctx context.Context, name string, cols []engine.ColumnDef) error {
	if err := s.call(ctx, "PUT", s.tablePath(name), nil, http.StatusCreated, nil); err != nil {
		return err
	}
	return s.call(ctx, "PUT", s.tablePath(name)+"/schema", map[string]any{"columns": cols}, http.StatusOK, nil)
}

// The bulk request body is the records between these two, joined by
// commas.
const (
	bulkPrefix = `{"records":[`
	bulkSuffix = "]}"
)

// insert posts one bulk request, its body spliced from the records.
func (s *httpStore) insert(ctx context.Context, table string, recs [][]byte) error {
	n := len(bulkPrefix) + len(bulkSuffix)
	for _, r := range recs {
		n += len(r) + 1
	}
	body := make([]byte, 0, n)
	body = append(body, bulkPrefix...)
	for i, r := range recs {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, r...)
	}
	return s.insertBody(ctx, table, append(body, bulkSuffix...))
}

// insertBody posts one bulk request body. Refusals of records (400, 409,
// 422) and of the body's size (413) are *recordErrors; the bulk error
// body does not say which record failed.
func (s *httpStore) insertBody(ctx context.Context, table string, body []byte) error {
	status, resp, err := s.do(ctx, "POST", s.tablePath(table)+"/bulk", body)
	switch {
	case err != nil:
		return err
	case status == http.StatusOK:
		return nil
	case status == http.StatusRequestEntityTooLarge:
		return &recordErrors{messages: []string{"larger than the server's request body limit (413)"}}
	case status == http.StatusBadRequest || status == http.StatusConflict || status == http.StatusUnprocessableEntity:
		var b struct {
			Errors []struct {
				Message string `json:"message"`
			} `json:"errors"`
		}
		re := &recordErrors{}
		if json.Unmarshal(resp, &b) == nil {
			for _, e := range b.Errors {
				re.messages = append(re.messages, e.Message)
			}
		}
		if len(re.messages) == 0 {
			re.messages = []string{newServerError(status, resp).message}
		}
		return re
	}
	return newServerError(status, resp)
}

// query posts one page request of the query endpoint.
func (s *httpStore) query(ctx context.Context, table string, q queryRequest) (queryPage, error) {
	var out struct {
		Records []map[string]any `json:"records"`
		Meta    struct {
			Page struct {
				Cursor string `json:"cursor"`
				More   bool   `json:"more"`
			} `json:"page"`
		} `json:"meta"`
	}
	if err := s.call(ctx, "POST", s.tablePath(table)+"/query", q.body(), http.StatusOK, &out); err != nil {
		return queryPage{}, err
	}
	return queryPage{records: out.Records, cursor: out.Meta.Page.Cursor, more: out.Meta.Page.More}, nil
}

// count summarizes the matching records into one group.
func (s *httpStore) count(ctx context.Context, table string, filter json.RawMessage) (int64, error) {
	in := map[string]any{"columns": []string{}, "summaries": map[string]any{"total": map[string]string{"count": "*"}}}
	if filter != nil {
		in["filter"] = filter
	}
	var out struct {
		Summaries []struct {
			Total json.Number `json:"total"`
		} `json:"summaries"`
	}
	if err := s.call(ctx, "POST", s.tablePath(table)+"/summarize", in, http.StatusOK, &out); err != nil {
		return 0, err
	}
	if len(out.Summaries) != 1 {
		return 0, errors.New("summarize: unexpected answer")
	}
	return out.Summaries[0].Total.Int64()
}

// close drops the idle connections.
func (s *httpStore) close() error {
	s.client.CloseIdleConnections()
	return nil
}
