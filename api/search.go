package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/fts"
	"github.com/coppice-db/coppice/index"
)

// searchBody is the body of a table or branch search (spec §4.1.3–4.1.4).
// Unknown keys are invalid; null is the same as absent.
type searchBody struct {
	Query     *string          `json:"query"`
	Fuzziness *float64         `json:"fuzziness"`
	Prefix    *string          `json:"prefix"`
	Target    json.RawMessage  `json:"target"`
	Filter    json.RawMessage  `json:"filter"`
	Boosters  json.RawMessage  `json:"boosters"`
	Highlight *searchHighlight `json:"highlight"`
	Page      *searchPage      `json:"page"`
	// Tables is read by branch search only.
	Tables json.RawMessage `json:"tables"`
	// Consistency is read by a cluster (cluster.go); one node is always
	// consistent.
	Consistency *string `json:"consistency"`
}

type searchHighlight struct {
	Enabled    *bool `json:"enabled"`
	EncodeHTML *bool `json:"encodeHTML"`
}

type searchPage struct {
	Size   *int `json:"size"`
	Offset *int `json:"offset"`
}

// searchTableEntry is the object form of an entry of a branch search's
// tables list.
type searchTableEntry struct {
	Table    *string         `json:"table"`
	Filter   json.RawMessage `json:"filter"`
	Target   json.RawMessage `json:"target"`
	Boosters json.RawMessage `json:"boosters"`
}

// input converts a decoded body to the engine's request, reading its
// target, filter and boosters.
func (b *searchBody) input() (engine.SearchRequest, error) {
	in := engine.SearchRequest{Query: b.Query, Fuzziness: b.Fuzziness, Prefix: b.Prefix}
	if err := checkConsistency(b.Consistency); err != nil {
		return in, err
	}
	if h := b.Highlight; h != nil {
		in.Highlight, in.EncodeHTML = h.Enabled, h.EncodeHTML
	}
	if p := b.Page; p != nil {
		in.Size, in.Offset = p.Size, p.Offset
	}
	var err error
	in.Target, in.Filter, in.Boosters, err = readTableSearch(b.Target, b.Filter, b.Boosters)
	return in, err
}

// readTableSearch reads the target, filter and boosters of a table search.
func readTableSearch(target, filter, boosters json.RawMessage) ([]fts.Target, engine.Filter, []fts.Booster, error) {
	t, err := fts.ReadTarget(target)
	if err != nil {
		return nil, engine.Filter{}, nil, err
	}
	f, err := index.ReadFilter(filter)
	if err != nil {
		return nil, engine.Filter{}, nil, err
	}
	b, err := fts.ReadBoosters(boosters)
	return t, f, b, err
}

// searchTable: POST T/search. An empty body finds nothing.
func (s *Server) searchTable(r *request) error {
	ref, table, in, err := readTableSearchRequest(r)
	if err != nil {
		return err
	}
	res, err := s.eng.SearchTable(r.context(), ref.Ref, table, in, engine.SearchOptions{})
	if err != nil {
		return err
	}
	r.setPlan(planSummary{res.Plan})
	s.writeSearch(r, res)
	return nil
}

// readTableSearchRequest reads the table and the body of a table search
// (and of its explain).
func readTableSearchRequest(r *request) (dbRef, string, engine.SearchRequest, error) {
	ref, table, err := r.tableRef()
	if err != nil {
		return ref, "", engine.SearchRequest{}, err
	}
	var body searchBody
	if err := r.decode(&body, true); err != nil {
		return ref, "", engine.SearchRequest{}, err
	}
	if body.Tables != nil {
		return ref, "", engine.SearchRequest{}, invalid("unknown field \"tables\": a table search takes no tables list")
	}
	in, err := body.input()
	return ref, table, in, err
}

// searchBranch: POST DB/search, over every table or the listed ones.
func (s *Server) searchBranch(r *request) error {
	ref, in, err := readBranchSearchRequest(r)
	if err != nil {
		return err
	}
	res, err := s.eng.SearchBranch(r.context(), ref.Ref, in, engine.SearchOptions{})
	if err != nil {
		return err
	}
	r.setPlan(planSummary{res.Plan})
	s.writeSearch(r, res)
	return nil
}

// readBranchSearchRequest reads the branch and the body of a branch search
// (and of its explain).
func readBranchSearchRequest(r *request) (dbRef, engine.SearchRequest, error) {
	ref, err := r.branchRef()
	if err != nil {
		return ref, engine.SearchRequest{}, err
	}
	in, err := readBranchSearchBody(r)
	return ref, in, err
}

// readBranchSearchBody reads the body of a branch search: the search
// settings, and the tables with their own targets, filters and boosters.
func readBranchSearchBody(r *request) (engine.SearchRequest, error) {
	var body searchBody
	if err := r.decode(&body, false); err != nil {
		return engine.SearchRequest{}, err
	}
	if body.Query == nil {
		return engine.SearchRequest{}, invalid("query is required")
	}
	switch {
	case body.Target != nil:
		return engine.SearchRequest{}, invalid("unknown field \"target\": a branch search takes targets per table, in tables")
	case body.Filter != nil:
		return engine.SearchRequest{}, invalid("unknown field \"filter\": a branch search takes filters per table, in tables")
	case body.Boosters != nil:
		return engine.SearchRequest{}, invalid("unknown field \"boosters\": a branch search takes boosters per table, in tables")
	}
	in, err := body.input()
	if err != nil || index.IsNullJSON(body.Tables) {
		return in, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(body.Tables, &items); err != nil {
		return in, invalid("tables must be an array of table names or {table, filter, target, boosters} objects")
	}
	in.Tables = []engine.SearchTable{}
	for _, it := range items {
		var st engine.SearchTable
		if t := bytes.TrimSpace(it); len(t) > 0 && t[0] == '{' {
			var e searchTableEntry
			if err := decodeStrict(t, &e); err != nil {
				return in, err
			}
			if e.Table == nil {
				return in, invalid("tables: an object entry needs a table")
			}
			st.Table = *e.Table
			if st.Target, st.Filter, st.Boosters, err = readTableSearch(e.Target, e.Filter, e.Boosters); err != nil {
				return in, err
			}
		} else if err := json.Unmarshal(it, &st.Table); err != nil {
			return in, invalid("tables: entries must be table names or {table, filter, target, boosters} objects")
		}
		in.Tables = append(in.Tables, st)
	}
	return in, nil
}

// writeSearch sends {records, totalCount, warning?}: each record whole,
// with score, table and highlight in its metadata, appended to the
// response's buffer as record reads are (docjson.go), keys in order.
func (s *Server) writeSearch(r *request, res *engine.SearchResult) {
	b := responseBody(r.ctx)
	b = append(b, `{"records":[`...)
	for i, h := range res.Records {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.appendDocMeta(b, h.Doc, func(b []byte) []byte { return s.appendHitMeta(b, h) })
	}
	b = append(b, `],"totalCount":`...)
	b = strconv.AppendInt(b, int64(res.TotalCount), 10)
	if res.Warning != "" {
		b = append(b, `,"warning":`...)
		b = appendString(b, res.Warning)
	}
	writeBody(r.ctx, http.StatusOK, append(b, '}'))
}

// appendHitMeta appends the metadata object of a found record: the
// record's, with its highlight (when on), score and table.
func (s *Server) appendHitMeta(b []byte, h *engine.SearchHit) []byte {
	d := h.Doc
	b = append(b, `{"createdAt":`...)
	b = appendTime(b, d.CreatedAt)
	if h.Highlight != nil {
		b = append(b, `,"highlight":`...)
		b = s.appendValue(b, h.Highlight)
	}
	b = append(b, `,"score":`...)
	b = appendFloat(b, h.Score)
	b = append(b, `,"table":`...)
	b = appendString(b, h.Table)
	b = append(b, `,"updatedAt":`...)
	b = appendTime(b, d.UpdatedAt)
	b = append(b, `,"version":`...)
	b = strconv.AppendUint(b, d.Version, 10)
	return append(b, '}')
}
