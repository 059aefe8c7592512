package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// queryBody is the body of a table query (spec §4.1.1). Filter, sort and
// columns are read by the index package's parsers, which keep their text
// for cursors. Unknown keys are invalid; null is the same as absent.
type queryBody struct {
	Columns     json.RawMessage `json:"columns"`
	Filter      json.RawMessage `json:"filter"`
	Sort        json.RawMessage `json:"sort"`
	Page        *queryPage      `json:"page"`
	Consistency *string         `json:"consistency"`

	// decoded says the scan of the body (querybody.go) has also read
	// filter, sort and columns into these, each decoded or notDecoded{},
	// so that the index package need not decode their raw text again.
	decoded               bool
	filter, sort, columns any
}

// read reads the filter, sort and columns of the body.
func (b *queryBody) read() (f index.Filter, s index.Sort, c index.Columns, err error) {
	if b.decoded && b.filter != (notDecoded{}) {
		f = index.ReadFilterValue(b.Filter, b.filter)
	} else if f, err = index.ReadFilter(b.Filter); err != nil {
		return f, s, c, err
	}
	if b.decoded && b.sort != (notDecoded{}) {
		s = index.ReadSortValue(b.Sort, b.sort)
	} else if s, err = index.ReadSort(b.Sort); err != nil {
		return f, s, c, err
	}
	if b.decoded && b.columns != (notDecoded{}) {
		c, err = index.ReadColumnsValue(b.Columns, b.columns)
	} else {
		c, err = index.ReadColumns(b.Columns)
	}
	return f, s, c, err
}

// queryPage is the page object of a query (spec §4.1.7).
type queryPage struct {
	Size   *int    `json:"size"`
	Offset *int    `json:"offset"`
	After  *string `json:"after"`
	Before *string `json:"before"`
	Start  *string `json:"start"`
	End    *string `json:"end"`
}

// Page limits of the two modes (spec §8, compat-api.md §1.2). Compat mode
// checks size and offset separately instead of their sum.
const (
	specMaxSize     = 200
	specMaxOffset   = 800
	specMaxDepth    = 1000
	compatMaxSize   = 1000
	compatMaxOffset = 49000
)

// queryOptions are the engine's query settings for the server's mode.
func (s *Server) queryOptions() engine.QueryOptions {
	if s.opts.Compat == CompatXata {
		return engine.QueryOptions{MaxSize: compatMaxSize, MaxOffset: compatMaxOffset, NoDepthLimit: true}
	}
	return engine.QueryOptions{MaxSize: specMaxSize, MaxOffset: specMaxOffset, MaxDepth: specMaxDepth}
}

// queryTable: POST T/query. An empty body is {}. Invalid filters, sorts,
// cursors and pages are 400 with the engine's message.
func (s *Server) queryTable(r *request) error {
	ref, table, in, err := readQuery(r)
	if err != nil {
		return err
	}
	opts := s.queryOptions()
	opts.Views = true // encoded from their stored values when the columns allow
	opts.Records = s.records
	res, err := s.eng.Query(r.context(), ref.Ref, table, in, opts)
	if err != nil {
		return err
	}
	r.setPlan(res.Plan)
	b := responseBody(r.ctx)
	b = append(b, `{"meta":{"page":{"cursor":`...)
	b = appendString(b, res.Cursor)
	b = append(b, `,"more":`...)
	b = strconv.AppendBool(b, res.More)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, int64(res.Size), 10)
	b = append(b, `}},"records":[`...)
	first := true
	for _, v := range res.Views {
		if !first {
			b = append(b, ',')
		}
		first = false
		if s.encoded != nil && v.Cached() {
			// A whole record as the cache keeps it: encoded once, as
			// point reads encode it.
			b = s.encoded.appendEncoding(b, v, s.appendView)
			continue
		}
		b = s.appendView(b, v)
	}
	for _, d := range res.Records {
		if d == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = s.appendDoc(b, d)
	}
	writeBody(r.ctx, http.StatusOK, append(b, "]}"...))
	return nil
}

// readQuery reads the table and the body of a query (and of its explain).
func readQuery(r *request) (dbRef, string, engine.QueryRequest, error) {
	var in engine.QueryRequest
	ref, table, err := r.tableRef()
	if err != nil {
		return ref, "", in, err
	}
	var body queryBody
	if err := r.readQueryBody(&body); err != nil {
		return ref, "", in, err
	}
	if err := checkConsistency(body.Consistency); err != nil {
		// Read by a cluster (cluster.go); a single node is always
		// consistent.
		return ref, "", in, err
	}
	if in.Filter, in.Sort, in.Columns, err = body.read(); err != nil {
		return ref, "", in, err
	}
	if p := body.Page; p != nil {
		in.Page = engine.PageInput{Size: p.Size, Offset: p.Offset, After: p.After, Before: p.Before, Start: p.Start, End: p.End}
	}
	return ref, table, in, nil
}
