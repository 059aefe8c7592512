package index

import (
	"encoding/json"
	"sort"
	"strings"
)

// Projection is a parsed column selection (spec §4.1.1): which columns of
// a record to return, which links to expand, and which reverse links to
// attach. id and the metadata key are always returned.
type Projection struct {
	// All selects every column of the table (absent columns, or "*").
	All bool
	// Leaves holds the selected value columns by dotted path.
	Leaves map[string]bool
	// Links holds the link columns to expand, by path, with what to select
	// from the linked record.
	Links map[string]*Projection
	// RevLinks are the reverse links to attach.
	RevLinks []*RevLink
	// FileFields holds, by path of a file or file[] column, the fields of
	// its file objects named one by one ("photo.base64Content"): with the
	// column selected they add to its default fields, else they are the
	// only ones returned.
	FileFields map[string]map[string]bool
}

// FileFieldNames are the fields of a file object a column path may name.
var FileFieldNames = map[string]bool{
	"id": true, "name": true, "mediaType": true, "size": true, "version": true,
	"enablePublicUrl": true, "signedUrlTimeout": true, "uploadUrlTimeout": true,
	"attributes": true, "url": true, "base64Content": true, "signedUrl": true, "uploadUrl": true,
}

// addFileField selects one field of the file objects of a file column; ok
// is false when path is not <file column>.<field>.
func (p *Projection) addFileField(t *Table, path string) (ok bool) {
	i := strings.LastIndexByte(path, '.')
	if i <= 0 {
		return false
	}
	c := t.Columns[path[:i]]
	if c == nil || (c.Type != TypeFile && c.Type != TypeFileArray) {
		return false
	}
	field := path[i+1:]
	if field == "*" {
		p.Leaves[c.Path] = true
		return true
	}
	if !FileFieldNames[field] {
		return false
	}
	if p.FileFields == nil {
		p.FileFields = map[string]map[string]bool{}
	}
	if p.FileFields[c.Path] == nil {
		p.FileFields[c.Path] = map[string]bool{}
	}
	p.FileFields[c.Path][field] = true
	return true
}

// RevLink is a ProjectionConfig for "<-table.column": the records of
// another table whose link column points at this record.
type RevLink struct {
	// As is the key in the output; by default the table and column names
	// concatenated.
	As     string
	Table  *Table
	Column *Column
	Select *Projection
	Order  Order
	Limit  int
	Offset int
}

// projErrorf makes an *InputError about a column selection.
func projErrorf(format string, args ...any) error { return inputErrorf(format, args...) }

// AllColumns is the projection of an absent columns list.
func AllColumns() *Projection {
	return &Projection{All: true, Leaves: map[string]bool{}, Links: map[string]*Projection{}}
}

// ParseColumns checks a columns list against t: names, dotted paths, "*",
// "link.*" and ProjectionConfig objects. The zero Columns selects all
// columns. tables finds a table by name for reverse links; nil allows
// none.
func ParseColumns(t *Table, cols Columns, tables func(name string) *Table) (*Projection, error) {
	if !cols.set {
		return AllColumns(), nil
	}
	return parseColumnList(t, cols.list, tables)
}

func parseColumnList(t *Table, list []any, tables func(string) *Table) (*Projection, error) {
	p := &Projection{Leaves: map[string]bool{}, Links: map[string]*Projection{}}
	for _, e := range list {
		switch e := e.(type) {
		case string:
			if err := p.add(t, e); err != nil {
				return nil, err
			}
		case map[string]any:
			rl, err := parseRevLink(t, e, tables)
			if err != nil {
				return nil, err
			}
			if rl == nil {
				// A plain column given as {"name": ...}.
				name, _ := e["name"].(string)
				if err := p.add(t, name); err != nil {
					return nil, err
				}
				continue
			}
			p.RevLinks = append(p.RevLinks, rl)
		default:
			return nil, projErrorf("columns entries must be strings or objects")
		}
	}
	return p, nil
}

// add selects one column path.
func (p *Projection) add(t *Table, path string) error {
	meta := t.Meta
	switch path {
	case "":
		return projErrorf("empty column name")
	case "*":
		p.All = true
		return nil
	case "id", meta, meta + ".*", meta + ".version", meta + ".createdAt", meta + ".updatedAt":
		return nil // always returned
	}
	if strings.HasSuffix(path, ".*") {
		// <object>.* is the object; <link>.* is handled below.
		if c := t.Columns[strings.TrimSuffix(path, ".*")]; c != nil && c.Type == TypeObject {
			path = strings.TrimSuffix(path, ".*")
		}
	}
	if c := t.Columns[path]; c != nil {
		switch c.Type {
		case TypeLink:
			if p.Links[path] == nil {
				p.Links[path] = AllColumns()
			} else {
				p.Links[path].All = true
			}
		case TypeObject:
			// Every sub-key; links inside stay unexpanded ({id}).
			for q, sub := range t.Columns {
				if strings.HasPrefix(q, path+".") && sub.Type != TypeObject {
					p.Leaves[q] = true
				}
			}
		default:
			p.Leaves[path] = true
		}
		return nil
	}
	if p.addFileField(t, path) {
		return nil
	}
	// A path through a link: the longest prefix that is a link column.
	segs := strings.Split(path, ".")
	for i := len(segs) - 1; i >= 1; i-- {
		prefix := strings.Join(segs[:i], ".")
		c := t.Columns[prefix]
		if c == nil || c.Type != TypeLink {
			continue
		}
		sub := p.Links[prefix]
		if sub == nil {
			sub = &Projection{Leaves: map[string]bool{}, Links: map[string]*Projection{}}
			p.Links[prefix] = sub
		}
		if err := sub.add(c.Link, strings.Join(segs[i:], ".")); err != nil {
			return projErrorf("column [%s]: column not found", path)
		}
		return nil
	}
	return projErrorf("column [%s]: column not found", path)
}

// parseRevLink reads a ProjectionConfig object; nil when it names a plain
// column rather than a reverse link.
func parseRevLink(t *Table, m map[string]any, tables func(string) *Table) (*RevLink, error) {
	name, ok := m["name"].(string)
	if !ok || name == "" {
		return nil, projErrorf("a projection object needs a name")
	}
	if !strings.HasPrefix(name, "<-") {
		return nil, nil
	}
	spec := strings.TrimPrefix(name, "<-")
	dot := strings.IndexByte(spec, '.')
	if dot <= 0 || tables == nil {
		return nil, projErrorf("reverse link [%s] must be <-table.column", name)
	}
	src := tables(spec[:dot])
	if src == nil {
		return nil, projErrorf("reverse link [%s]: table [%s] not found", name, spec[:dot])
	}
	col := src.Columns[spec[dot+1:]]
	if col == nil || col.Type != TypeLink || col.Link == nil || col.Link.ID != t.ID {
		return nil, projErrorf("reverse link [%s]: column [%s] is not a link to table [%s]", name, spec[dot+1:], t.Name)
	}
	rl := &RevLink{As: strings.ReplaceAll(spec, ".", ""), Table: src, Column: col, Limit: 20}
	if as, ok := m["as"].(string); ok && as != "" {
		rl.As = as
	}
	if n, ok, err := intField(m, "limit"); err != nil {
		return nil, err
	} else if ok {
		if n < 0 {
			return nil, projErrorf("reverse link [%s]: limit must not be negative", name)
		}
		rl.Limit = n
	}
	if n, ok, err := intField(m, "offset"); err != nil {
		return nil, err
	} else if ok {
		if n < 0 {
			return nil, projErrorf("reverse link [%s]: offset must not be negative", name)
		}
		rl.Offset = n
	}
	rl.Select = AllColumns()
	if cols, ok := m["columns"].([]any); ok {
		sel, err := parseColumnList(src, cols, tables)
		if err != nil {
			return nil, err
		}
		rl.Select = sel
	}
	if s, ok := m["sort"]; ok && s != nil {
		o, err := ParseSort(src, s)
		if err != nil {
			return nil, err
		}
		rl.Order = o
	}
	return rl, nil
}

func intField(m map[string]any, k string) (int, bool, error) {
	v, ok := m[k]
	if !ok || v == nil {
		return 0, false, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, false, projErrorf("%s must be an integer", k)
	}
	i, err := n.Int64()
	if err != nil {
		return 0, false, projErrorf("%s must be an integer", k)
	}
	return int(i), true, nil
}

// Selected reports whether a value column at path is selected.
func (p *Projection) Selected(path string) bool {
	return p.All || p.Leaves[path]
}

// LinkPaths lists the links to expand, in order.
func (p *Projection) LinkPaths() []string {
	out := make([]string, 0, len(p.Links))
	for k := range p.Links {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
