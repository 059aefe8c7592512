package api

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// timeLayout is the output form of datetimes: RFC 3339 in UTC with
// milliseconds (compat-api.md §3.5).
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// formatTime formats a timestamp for output.
func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// selection is a parsed `columns` list at one level of a record: a table,
// an object column or a linked record.
type selection struct {
	all bool // "*": every column of this level, links as {id}
	id  bool // "id" was named
	// keys are the columns named at this level. A nil value selects the
	// whole column: an object with all sub-keys, a link expanded to the full
	// linked record. A non-nil value selects parts of it.
	keys map[string]*selection
}

// tableInfo indexes one table's column definitions by dotted path.
type tableInfo struct {
	name string
	cols map[string]engine.ColumnDef
}

// renderer turns engine records into response JSON for one request: value
// encoding, projection and link expansion. Linked records are read once.
type renderer struct {
	s      *Server
	ref    engine.Ref
	tables map[string]*tableInfo // nil until a selection needs the schema
	linked map[[2]string]*engine.Record
}

// newRenderer returns a renderer for records of one branch.
func (s *Server) newRenderer(ref engine.Ref) *renderer {
	return &renderer{s: s, ref: ref}
}

// loadSchema reads the branch schema for projections; it fails like any
// branch access (404 for a missing database or branch).
func (rd *renderer) loadSchema() error {
	if rd.tables != nil {
		return nil
	}
	d, err := rd.s.eng.BranchDetails(rd.ref)
	if err != nil {
		return err
	}
	rd.tables = make(map[string]*tableInfo, len(d.Schema.Tables))
	for _, t := range d.Schema.Tables {
		ti := &tableInfo{name: t.Name, cols: map[string]engine.ColumnDef{}}
		var walk func(prefix string, cols []engine.ColumnDef)
		walk = func(prefix string, cols []engine.ColumnDef) {
			for _, c := range cols {
				ti.cols[prefix+c.Name] = c
				if c.Type == engine.TypeObject {
					walk(prefix+c.Name+".", c.Columns)
				}
			}
		}
		walk("", t.Columns)
		rd.tables[t.Name] = ti
	}
	return nil
}

// table returns a table of the branch or the engine's not-found error.
func (rd *renderer) table(name string) (*tableInfo, error) {
	if err := rd.loadSchema(); err != nil {
		return nil, err
	}
	t := rd.tables[name]
	if t == nil {
		return nil, engine.Errorf(engine.CodeNotFound, "table [%s] not found", name)
	}
	return t, nil
}

// selection parses a `columns` list against a table. Unknown columns are a
// 400 naming the column. A nil list gives a nil selection: everything.
func (rd *renderer) selection(table string, cols []string) (*selection, error) {
	t, err := rd.table(table)
	if err != nil || cols == nil {
		return nil, err
	}
	sel := &selection{}
	for _, c := range cols {
		if err := rd.addPath(sel, t, "", c, strings.Split(c, ".")); err != nil {
			return nil, err
		}
	}
	return sel, nil
}

// addPath adds one dotted column path to sel. prefix is the dotted path of
// the object level sel describes inside table t; full is the path as given,
// for messages.
func (rd *renderer) addPath(sel *selection, t *tableInfo, prefix, full string, segs []string) error {
	seg := segs[0]
	last := len(segs) == 1
	if last && seg == "*" {
		sel.all = true
		return nil
	}
	if prefix == "" {
		if last && seg == "id" {
			sel.id = true
			return nil
		}
		if seg == rd.s.meta {
			// Metadata is always returned; naming it is allowed.
			if last || len(segs) == 2 && isMetaField(segs[1]) {
				return nil
			}
			return invalid("column [%s]: column not found", full)
		}
	}
	if seg == "" {
		return invalid("column [%s]: column not found", full)
	}
	col, ok := t.cols[prefix+seg]
	if !ok {
		return invalid("column [%s]: column not found", full)
	}
	if sel.keys == nil {
		sel.keys = map[string]*selection{}
	}
	sub, named := sel.keys[seg]
	if last {
		sel.keys[seg] = nil
		return nil
	}
	if named && sub == nil {
		// The whole column is already selected; validate the rest anyway.
		sub = &selection{}
	} else if sub == nil {
		sub = &selection{}
		sel.keys[seg] = sub
	}
	switch col.Type {
	case engine.TypeObject:
		return rd.addPath(sub, t, prefix+seg+".", full, segs[1:])
	case engine.TypeLink:
		if col.Link == nil {
			return invalid("column [%s]: column not found", full)
		}
		target, err := rd.table(col.Link.Table)
		if err != nil {
			return err
		}
		return rd.addPath(sub, target, "", full, segs[1:])
	}
	return invalid("column [%s]: column not found", full)
}

// isMetaField reports whether s names a field of the record metadata.
func isMetaField(s string) bool {
	switch s {
	case "*", "version", "createdAt", "updatedAt":
		return true
	}
	return false
}

// metaJSON is the record metadata object.
func metaJSON(rec *engine.Record) map[string]any {
	return map[string]any{
		"version":   rec.Version,
		"createdAt": formatTime(rec.CreatedAt),
		"updatedAt": formatTime(rec.UpdatedAt),
	}
}

// record renders a record of table: id and metadata when asked, then the
// columns sel selects (nil: every column, links as {id}).
func (rd *renderer) record(table string, rec *engine.Record, sel *selection, withID, withMeta bool) (map[string]any, error) {
	out := make(map[string]any, len(rec.Values)+2)
	if withID {
		out["id"] = rec.ID
	}
	if withMeta {
		out[rd.s.meta] = metaJSON(rec)
	}
	if sel == nil {
		for k, v := range rec.Values {
			out[k] = plainValue(v)
		}
		return out, nil
	}
	t, err := rd.table(table)
	if err != nil {
		return nil, err
	}
	return out, rd.level(out, t, "", rec.Values, sel)
}

// level renders the values of one object level into out.
func (rd *renderer) level(out map[string]any, t *tableInfo, prefix string, values map[string]any, sel *selection) error {
	for k, v := range values {
		sub, named := sel.keys[k]
		if !named && !sel.all {
			continue
		}
		if !named {
			out[k] = plainValue(v)
			continue
		}
		col := t.cols[prefix+k]
		switch col.Type {
		case engine.TypeObject:
			m, ok := v.(map[string]any)
			if !ok || sub == nil {
				out[k] = plainValue(v)
				continue
			}
			o := map[string]any{}
			if err := rd.level(o, t, prefix+k+".", m, sub); err != nil {
				return err
			}
			if len(o) > 0 {
				out[k] = o
			}
		case engine.TypeLink:
			l, ok := v.(engine.Link)
			if !ok || col.Link == nil {
				out[k] = plainValue(v)
				continue
			}
			target, err := rd.fetch(col.Link.Table, l.ID)
			if err != nil {
				return err
			}
			if target == nil {
				continue // a dangling link is absent
			}
			o, err := rd.record(col.Link.Table, target, sub, true, true)
			if err != nil {
				return err
			}
			out[k] = o
		default:
			out[k] = plainValue(v)
		}
	}
	return nil
}

// fetch reads a linked record, nil when it no longer exists.
func (rd *renderer) fetch(table, id string) (*engine.Record, error) {
	key := [2]string{table, id}
	if rec, ok := rd.linked[key]; ok {
		return rec, nil
	}
	rec, err := rd.s.eng.Get(rd.ref, table, id)
	if engine.CodeOf(err) == engine.CodeNotFound {
		rec, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if rd.linked == nil {
		rd.linked = map[[2]string]*engine.Record{}
	}
	rd.linked[key] = rec
	return rec, nil
}

// plainValue converts an engine output value to its JSON form: datetimes
// as RFC 3339 with milliseconds, links as {"id"}, json columns as JSON text.
func plainValue(v any) any {
	switch x := v.(type) {
	case time.Time:
		return formatTime(x)
	case engine.Link:
		return map[string]any{"id": x.ID}
	case engine.JSONText:
		return string(x)
	case json.RawMessage:
		return x
	case map[string]any:
		o := make(map[string]any, len(x))
		for k, e := range x {
			o[k] = plainValue(e)
		}
		return o
	}
	return v
}
