package api

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// timeLayout is the output form of datetimes: RFC 3339 in UTC with
// milliseconds (compat-api.md §3.5).
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// formatTime formats a timestamp for output.
func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// metaJSON is the record metadata object.
func metaJSON(version uint64, createdAt, updatedAt time.Time) map[string]any {
	return map[string]any{
		"version":   version,
		"createdAt": formatTime(createdAt),
		"updatedAt": formatTime(updatedAt),
	}
}

// renderDoc renders a projected record: its id, its metadata under the
// mode's key, and its values.
func (s *Server) renderDoc(d *engine.Doc) map[string]any {
	out := s.renderValues(d.Values)
	out["id"] = d.ID
	out[s.meta] = metaJSON(d.Version, d.CreatedAt, d.UpdatedAt)
	return out
}

// renderValues renders the values of one level of a record (the record
// itself or an object column). Null values are omitted.
func (s *Server) renderValues(values map[string]any) map[string]any {
	out := make(map[string]any, len(values)+2)
	for k, v := range values {
		if x, ok := s.renderValue(v); ok {
			out[k] = x
		}
	}
	return out
}

// renderValue converts one projected value to its JSON form (compat-api.md
// §3.5, §12): an un-expanded link is {"id"}, an expanded one the linked
// record with its own id and metadata, a reverse link {"records": [...]},
// a json column its JSON text, a datetime RFC 3339 with milliseconds. ok is
// false for a null value, which is omitted.
func (s *Server) renderValue(v any) (out any, ok bool) {
	switch x := v.(type) {
	case nil:
		return nil, false
	case *engine.Doc:
		if x == nil {
			return nil, false
		}
		return s.renderDoc(x), true
	case *engine.RevLinkResult:
		if x == nil {
			return nil, false
		}
		return s.renderRevLink(x), true
	case engine.RevLinkResult:
		return s.renderRevLink(&x), true
	case engine.Link:
		return map[string]any{"id": x.ID}, true
	case engine.JSONText:
		return string(x), true
	case engine.File:
		return s.fileJSON(&x), true
	case []engine.File:
		return s.filesJSON(x), true
	case time.Time:
		return formatTime(x), true
	case map[string]any:
		return s.renderValues(x), true
	}
	return v, true
}

// renderRevLink renders the records of a reverse link; an empty result is
// an empty list, never null.
func (s *Server) renderRevLink(r *engine.RevLinkResult) map[string]any {
	recs := make([]map[string]any, 0, len(r.Records))
	for _, d := range r.Records {
		if d != nil {
			recs = append(recs, s.renderDoc(d))
		}
	}
	return map[string]any{"records": recs}
}

// project projects records of a table through a columns list (the zero
// Columns selects every column), one Doc per record in order. The records
// must come from the engine (writes, Get), which keeps what projections
// read.
func (s *Server) project(ref engine.Ref, table string, recs []*engine.Record, columns index.Columns) ([]*engine.Doc, error) {
	docs, err := s.eng.Project(ref, table, recs, columns)
	if err != nil {
		return nil, err
	}
	if len(docs) != len(recs) {
		return nil, errors.New("api: projection returned a different number of records")
	}
	for _, d := range docs {
		if d == nil {
			return nil, errors.New("api: projection of a record the engine did not return")
		}
	}
	return docs, nil
}

// columnsJSON writes a `columns` list as a JSON array, which transactions
// group their results by; nil stays nil (every column).
func columnsJSON(cols []string) json.RawMessage {
	if cols == nil {
		return nil
	}
	b, err := json.Marshal(cols)
	if err != nil {
		panic(err) // a []string always encodes
	}
	return b
}

// namesID reports whether a columns list (a JSON array) names "id" at the
// top level.
func namesID(columns json.RawMessage) bool {
	var list []any
	if json.Unmarshal(columns, &list) != nil {
		return false
	}
	for _, e := range list {
		if e == "id" {
			return true
		}
	}
	return false
}
