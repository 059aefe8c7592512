package index

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
)

// memSource is an in-memory Source over records by row, for tests. With
// noStore it has no value stores, so that readers fall back to records and
// grouping to postings.
type memSource struct {
	t       *Table
	rows    map[uint32]*codec.Record
	tables  map[uint32]*memSource // link targets by table id
	noStore bool
	dense   bool // value stores are DenseValues
	// indexed dense stores also keep their rows in value order and narrow
	// substrings, as the engine's column stores do.
	indexed bool
}

func (m *memSource) Table() *Table { return m.t }

func (m *memSource) value(row uint32, c *Column) codec.Value {
	rec := m.rows[row]
	if rec == nil {
		return codec.Null()
	}
	return recordValue(rec, c)
}

func (m *memSource) where(fn func(row uint32) bool) *roaring.Bitmap {
	b := roaring.New()
	for row := range m.rows {
		if fn(row) {
			b.Add(row)
		}
	}
	return b
}

func (m *memSource) Live() (*roaring.Bitmap, error) {
	return m.where(func(uint32) bool { return true }), nil
}

func (m *memSource) Exists(c *Column) (*roaring.Bitmap, error) {
	return m.where(func(row uint32) bool { return !m.value(row, c).IsNull() }), nil
}

func (m *memSource) Posting(c *Column, v codec.Value) (*roaring.Bitmap, error) {
	return m.where(func(row uint32) bool {
		x := m.value(row, c)
		if x.Kind == codec.KindStrings {
			for _, s := range x.Strs {
				if codec.Equal(codec.String(s), v) {
					return true
				}
			}
			return false
		}
		return !x.IsNull() && codec.Equal(x, v)
	}), nil
}

func (m *memSource) Scan(c *Column, b Bounds, desc bool, fn func(v codec.Value, rows *roaring.Bitmap) bool) error {
	seen := map[string]codec.Value{}
	for row := range m.rows {
		x := m.value(row, c)
		vals := []codec.Value{x}
		if x.Kind == codec.KindStrings {
			vals = vals[:0]
			for _, s := range x.Strs {
				vals = append(vals, codec.String(s))
			}
		}
		for _, v := range vals {
			if !v.IsNull() {
				seen[string(appendValueKey(nil, v))] = v
			}
		}
	}
	var vals []codec.Value
	for _, v := range seen {
		if b.Lo != nil && (codec.Compare(v, *b.Lo) < 0 || !b.LoIncl && codec.Equal(v, *b.Lo)) {
			continue
		}
		if b.Hi != nil && (codec.Compare(v, *b.Hi) > 0 || !b.HiIncl && codec.Equal(v, *b.Hi)) {
			continue
		}
		if b.Prefix != nil && (v.Kind != codec.KindString || !strings.HasPrefix(v.Str, *b.Prefix)) {
			continue
		}
		vals = append(vals, v)
	}
	sort.Slice(vals, func(i, j int) bool { return (codec.Compare(vals[i], vals[j]) < 0) != desc })
	for _, v := range vals {
		rows, _ := m.Posting(c, v)
		if !fn(v, rows) {
			break
		}
	}
	return nil
}

// memValues is a value store of a memSource.
type memValues struct {
	m *memSource
	c *Column
}

func (v memValues) Get(row uint32) codec.Value { return v.m.value(row, v.c) }

// memDense is a dense value store of a memSource, built when asked for.
type memDense struct {
	memValues
	present roaring.Bitmap
	ints    []int64
	floats  []float64
	strs    []string
}

func (d *memDense) Present() *roaring.Bitmap { return &d.present }
func (d *memDense) Ints() []int64            { return d.ints }
func (d *memDense) Floats() []float64        { return d.floats }
func (d *memDense) Strings() PackedStrings   { return packStrings(d.strs) }

// packStrings packs values by row the way a column store keeps them.
func packStrings(vals []string) PackedStrings {
	if vals == nil {
		return PackedStrings{}
	}
	p := PackedStrings{Data: []byte{0}, Offs: make([]uint64, len(vals))}
	for row, v := range vals {
		if v != "" {
			p.Offs[row] = uint64(len(p.Data))
			p.Data = binary.AppendUvarint(p.Data, uint64(len(v)))
			p.Data = append(p.Data, v...)
		}
	}
	return p
}

func (m *memSource) Values(c *Column) (ColumnValues, error) {
	if m.noStore || !storable(c) {
		return nil, nil
	}
	if !m.dense {
		return memValues{m, c}, nil
	}
	d := &memDense{memValues: memValues{m, c}}
	var size uint32
	for row := range m.rows {
		size = max(size, row+1)
	}
	switch c.Type {
	case "int", "datetime", "bool":
		d.ints = make([]int64, size)
	case "float":
		d.floats = make([]float64, size)
	case "string", "email", "link":
		d.strs = make([]string, size)
	default:
		return memValues{m, c}, nil
	}
	for row := range m.rows {
		v := m.value(row, c)
		if v.IsNull() {
			continue
		}
		d.present.Add(row)
		switch {
		case d.ints != nil:
			d.ints[row] = v.Int
		case d.floats != nil:
			d.floats[row] = v.Float
		default:
			d.strs[row] = v.Str
		}
	}
	if m.indexed {
		return memIndexed{d}, nil
	}
	return d, nil
}

// memIndexed is a dense store of a memSource that keeps its rows in order
// of value (OrderedValues) and narrows substrings (SubstringValues).
type memIndexed struct{ *memDense }

func (d memIndexed) Order() []uint32 {
	if d.ints == nil && d.floats == nil && d.strs == nil {
		return nil
	}
	rows := d.present.ToArray()
	less := func(a, b uint32) bool {
		switch {
		case d.ints != nil:
			return d.ints[a] < d.ints[b]
		case d.floats != nil:
			return d.floats[a] < d.floats[b]
		}
		return d.strs[a] < d.strs[b]
	}
	// Rows of equal value by record id, as OrderedValues asks.
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if less(a, b) || less(b, a) {
			return less(a, b)
		}
		return d.m.rows[a].ID < d.m.rows[b].ID
	})
	return rows
}

// SubstringCandidates narrows to exactly the rows holding sub, a superset
// as the contract allows.
func (d memIndexed) SubstringCandidates(sub string, fold bool) (rows, sure *roaring.Bitmap, ok bool) {
	if d.strs == nil {
		return nil, nil, false
	}
	out := roaring.New()
	it := d.present.Iterator()
	for it.HasNext() {
		row := it.Next()
		s := d.strs[row]
		if fold {
			s, sub = strings.ToLower(s), strings.ToLower(sub)
		}
		if strings.Contains(s, sub) {
			out.Add(row)
		}
	}
	return out, nil, true
}

func (m *memSource) Record(row uint32, rec *codec.Record) (bool, error) {
	r := m.rows[row]
	if r == nil {
		return false, nil
	}
	*rec = *r.Clone()
	return true, nil
}

func (m *memSource) Rows(ids []string) (*roaring.Bitmap, error) {
	return m.where(func(row uint32) bool {
		for _, id := range ids {
			if m.rows[row].ID == id {
				return true
			}
		}
		return false
	}), nil
}

func (m *memSource) Linked(c *Column) (Source, error) {
	t := m.tables[c.Link.ID]
	if t == nil {
		return nil, errors.New("no linked table")
	}
	return t, nil
}

// sumTestTables are "things" linking to "people".
func sumTestTables() (things, people *Table) {
	people = &Table{ID: 2, Name: "people", Columns: map[string]*Column{}, Meta: "svc"}
	things = &Table{ID: 1, Name: "things", Columns: map[string]*Column{}, Meta: "svc"}
	add := func(t *Table, path string, id uint32, typ ColumnType, link *Table) {
		t.Columns[path] = &Column{Path: path, ID: id, Type: typ, Link: link}
	}
	add(people, "name", 1, "string", nil)
	add(people, "age", 2, "int", nil)
	add(things, "kind", 1, "string", nil)
	add(things, "n", 2, "int", nil)
	add(things, "f", 3, "float", nil)
	add(things, "d", 4, "datetime", nil)
	add(things, "tags", 5, "multiple", nil)
	add(things, "note", 6, "text", nil)
	add(things, "js", 7, "json", nil)
	add(things, "o", 0, "object", nil)
	add(things, "o.c", 8, "string", nil)
	add(things, "o.z", 9, "int", nil)
	add(things, "who", 10, "link", people)
	add(things, "ok", 11, "bool", nil)
	add(things, "vec", 12, "vector", nil)
	add(things, "pic", 13, "file", nil)
	return things, people
}

// storeModes are the ways a memSource keeps values: value stores, dense
// value stores, and none.
var storeModes = []string{"store", "dense", "none"}

// sumTestSource builds the things and people of the tests, with values
// kept as mode says.
func sumTestSource(mode string) *memSource {
	noStore, dense := mode == "none", mode == "dense"
	things, people := sumTestTables()
	ps := &memSource{t: people, rows: map[uint32]*codec.Record{}, noStore: noStore, dense: dense}
	ts := &memSource{t: things, rows: map[uint32]*codec.Record{}, noStore: noStore, dense: dense,
		tables: map[uint32]*memSource{people.ID: ps}}
	rec := func(id string, fields ...codec.Field) *codec.Record {
		r := &codec.Record{ID: id, Version: 1}
		for _, f := range fields {
			r.Set(f.Col, f.Val)
		}
		return r
	}
	f := func(col uint32, v codec.Value) codec.Field { return codec.Field{Col: col, Val: v} }
	day := func(d int) codec.Value { return codec.Datetime(time.Date(2024, 1, d, 0, 0, 0, 0, time.UTC)) }
	ps.rows[0] = rec("ann", f(1, codec.String("Ann")), f(2, codec.Int(30)))
	ps.rows[1] = rec("bob", f(1, codec.String("Bob")))
	ts.rows[0] = rec("t0", f(1, codec.String("a")), f(2, codec.Int(1)), f(3, codec.Float(1.5)), f(4, day(1)),
		f(5, codec.Strings([]string{"x", "y"})), f(6, codec.String("hello")), f(7, codec.String(`{"k":1}`)),
		f(8, codec.String("red")), f(9, codec.Int(5)), f(10, codec.String("ann")), f(11, codec.Bool(true)))
	ts.rows[1] = rec("t1", f(1, codec.String("a")), f(2, codec.Int(3)), f(4, day(3)),
		f(5, codec.Strings([]string{"b"})), f(8, codec.String("red")), f(10, codec.String("bob")), f(11, codec.Bool(false)))
	ts.rows[2] = rec("t2", f(1, codec.String("b")), f(2, codec.Int(2)), f(3, codec.Float(-2)), f(7, codec.String(`{"k":1}`)),
		f(10, codec.String("ann")))
	ts.rows[3] = rec("t3", f(2, codec.Int(7)), f(3, codec.Float(0.25)), f(8, codec.String("blue")), f(10, codec.String("gone")))
	ts.rows[5] = rec("t5", f(1, codec.String("b")), f(11, codec.Bool(true)))
	return ts
}

// summarizeBody reads a summarize request body as the API does and runs
// it.
func summarizeBody(src Source, body string) (*SummarizeResult, error) {
	in, err := summarizeRequest(body)
	if err != nil {
		return nil, err
	}
	return Summarize(context.Background(), src, in)
}

// summarizeRequest reads a summarize request body as the API does.
func summarizeRequest(body string) (SummarizeRequest, error) {
	var b struct {
		Filter          json.RawMessage `json:"filter"`
		Columns         json.RawMessage `json:"columns"`
		Summaries       json.RawMessage `json:"summaries"`
		Sort            json.RawMessage `json:"sort"`
		SummariesFilter json.RawMessage `json:"summariesFilter"`
		Consistency     string          `json:"consistency"`
		Page            struct {
			Size *int `json:"size"`
		} `json:"page"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		return SummarizeRequest{}, err
	}
	in := SummarizeRequest{Consistency: b.Consistency, PageSize: b.Page.Size}
	var err error
	if in.Filter, err = ReadFilter(b.Filter); err != nil {
		return in, err
	}
	if in.Columns, err = ReadGroupColumns(b.Columns); err != nil {
		return in, err
	}
	if in.Summaries, err = ReadSummaries(b.Summaries); err != nil {
		return in, err
	}
	if in.Sort, err = ReadSort(b.Sort); err != nil {
		return in, err
	}
	in.SummariesFilter, err = ReadSummariesFilter(b.SummariesFilter)
	return in, err
}

func TestSummarizeErrors(t *testing.T) {
	src := sumTestSource("store")
	f := func(body, want string) {
		t.Helper()
		_, err := summarizeBody(src, body)
		if err == nil {
			t.Fatalf("%s: no error, want %q", body, want)
		}
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Fatalf("%s: error %T %v is not an InputError", body, err, err)
		}
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: error %q, want %q", body, err, want)
		}
	}
	f(`{"columns":"kind"}`, "columns must be an array")
	f(`{"columns":[1]}`, "columns must be an array")
	f(`{"columns":["nope"]}`, "column [nope]: column not found")
	f(`{"columns":["who.nope"]}`, "column [who.nope]: column not found")
	f(`{"columns":["kind.x"]}`, "column [kind.x]: column not found")
	f(`{"columns":["id"]}`, "column [id]: internal columns cannot be grouped")
	f(`{"columns":["svc.createdAt"]}`, "internal columns cannot be grouped")
	f(`{"columns":["vec"]}`, "vector columns cannot be grouped")
	f(`{"columns":["kind.*"]}`, "neither an object nor a link")
	f(`{"summaries":[]}`, "summaries must be an object")
	f(`{"summaries":{"a":"count"}}`, "summary [a]: a summary is an object")
	f(`{"summaries":{"a":{"count":"*","min":"n"}}}`, "summary [a]: a summary is an object")
	f(`{"summaries":{"a":{"median":"n"}}}`, "unknown summary function [median]")
	f(`{"summaries":{"a":{"sum":1}}}`, "sum takes a column name")
	f(`{"summaries":{"a":{"sum":"*"}}}`, "only count takes [*]")
	f(`{"summaries":{"a":{"count":"id"}}}`, "column [id]: internal columns cannot be summarized")
	f(`{"summaries":{"a":{"max":"svc.version"}}}`, "internal columns cannot be summarized")
	f(`{"summaries":{"a":{"count":"o"}}}`, "object columns cannot be summarized")
	f(`{"summaries":{"a":{"min":"nope"}}}`, "column [nope]: column not found")
	f(`{"summaries":{"a":{"min":"ok"}}}`, "min is not supported on bool columns")
	f(`{"summaries":{"a":{"max":"js"}}}`, "max is not supported on json columns")
	f(`{"summaries":{"a":{"sum":"kind"}}}`, "sum is not supported on string columns")
	f(`{"summaries":{"a":{"average":"d"}}}`, "average is not supported on datetime columns")
	f(`{"summaries":{"a":{"sum":"who"}}}`, "sum is not supported on link columns")
	f(`{"summaries":{"a.b":{"count":"*"}}}`, "summary name cannot")
	f(`{"summaries":{"$a":{"count":"*"}}}`, "summary name cannot")
	f(`{"columns":["kind"],"summaries":{"kind":{"count":"*"}}}`, "summary [kind]: the name collides with the requested column [kind]")
	f(`{"columns":["o"],"summaries":{"o":{"count":"*"}}}`, "collides with the requested column [o.c]")
	f(`{"columns":["o.*"],"summaries":{"o":{"count":"*"}}}`, "collides")
	f(`{"columns":["who.name"],"summaries":{"who":{"count":"*"}}}`, "collides with the requested column [who.name]")
	f(`{"columns":["kind"],"sort":[{"n":"asc"}]}`, "sort: column [n] is neither a group column nor a summary")
	f(`{"columns":["kind"],"sort":[{"kind":"up"}]}`, "must be asc or desc")
	f(`{"columns":["kind"],"sort":{"*":"random"}}`, "random order is not supported")
	f(`{"columns":["kind"],"sort":[3]}`, "a sort entry must be")
	f(`{"columns":["kind"],"sort":3}`, "sort must be an array or an object")
	f(`{"columns":["kind"],"summariesFilter":{"nope":1}}`, "summariesFilter: column [nope]: column not found")
	f(`{"columns":["kind"],"summariesFilter":{"id":"x"}}`, "summariesFilter: column [id]: column not found")
	f(`{"columns":["kind"],"summaries":{"c":{"count":"*"}},"summariesFilter":{"c":"x"}}`, "summariesFilter: column [c]: $is needs an integer")
	f(`{"filter":{"nope":1}}`, "filter: column [nope]: column not found")
	f(`{"page":{"size":0}}`, "page size must be at least 1")
	f(`{"page":{"size":1001}}`, "page size exceeds max limit of 1000")
	f(`{"consistency":"weak"}`, "consistency must be strong or eventual")
}

// summarizeJSON runs a request and prints the output as JSON.
func summarizeJSON(t *testing.T, src Source, body string) string {
	t.Helper()
	out, err := summarizeBody(src, body)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	b, err := json.Marshal(summaryObjects(out))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSummarize checks outputs with value stores (grouping by values),
// dense ones (summaries scan arrays) and none (grouping by postings, values
// from records): all must agree.
func TestSummarize(t *testing.T) {
	for _, mode := range storeModes {
		src := sumTestSource(mode)
		f := func(body, want string) {
			t.Helper()
			if got := summarizeJSON(t, src, body); got != want {
				t.Errorf("%s: %s:\ngot  %s\nwant %s", mode, body, got, want)
			}
		}
		f(`{"columns":["kind"],"summaries":{"c":{"count":"*"},"s":{"sum":"n"},"fs":{"sum":"f"},"avg":{"average":"n"}}}`,
			`[{"avg":2,"c":2,"fs":1.5,"kind":"a","s":4},{"avg":2,"c":2,"fs":-2,"kind":"b","s":2},{"avg":7,"c":1,"fs":0.25,"kind":null,"s":7}]`)
		f(`{"columns":["kind"],"summaries":{"c":{"count":"f"},"mn":{"min":"f"},"mx":{"max":"tags"},"md":{"min":"d"}}}`,
			`[{"c":1,"kind":"a","md":"2024-01-01T00:00:00Z","mn":1.5,"mx":"y"},{"c":1,"kind":"b","md":null,"mn":-2,"mx":null},{"c":1,"kind":null,"md":null,"mn":0.25,"mx":null}]`)
		// No columns: one group; empty columns: one group; no summaries:
		// distinct groups.
		f(`{"summaries":{"c":{"count":"*"},"s":{"sum":"o.z"}}}`, `[{"c":5,"s":5}]`)
		f(`{"columns":[],"filter":{"kind":"zzz"},"summaries":{"c":{"count":"*"},"s":{"sum":"n"},"m":{"max":"kind"}}}`, `[{"c":0,"m":null,"s":null}]`)
		f(`{"columns":[]}`, `[{}]`)
		f(`{"columns":["ok"]}`, `[{"ok":false},{"ok":true},{"ok":null}]`)
		f(`{"columns":["kind"],"filter":{"kind":"zzz"},"summaries":{"c":{"count":"*"}}}`, `[]`)
		// Nested output: objects, links, link ids, a dangling link.
		f(`{"columns":["who.name","o.c"],"summaries":{"c":{"count":"*"}}}`,
			`[{"c":1,"o":{"c":"red"},"who":{"name":"Ann"}},{"c":1,"o":{"c":null},"who":{"name":"Ann"}},{"c":1,"o":{"c":"red"},"who":{"name":"Bob"}},{"c":1,"o":{"c":"blue"},"who":{"name":null}},{"c":1,"o":{"c":null},"who":{"name":null}}]`)
		f(`{"columns":["who"],"summaries":{"age":{"max":"who.age"}}}`,
			`[{"age":30,"who":{"id":"ann"}},{"age":null,"who":{"id":"bob"}},{"age":null,"who":{"id":"gone"}},{"age":null,"who":{"id":null}}]`)
		f(`{"columns":["o"]}`, `[{"o":{"c":"blue","z":null}},{"o":{"c":"red","z":5}},{"o":{"c":"red","z":null}},{"o":{"c":null,"z":null}}]`)
		f(`{"columns":["js","tags"],"filter":{"$exists":"js"}}`, `[{"js":"{\"k\":1}","tags":["x","y"]},{"js":"{\"k\":1}","tags":null}]`)
		// Sort by summaries, nulls last both ways; summariesFilter; page
		// size.
		f(`{"columns":["kind"],"summaries":{"m":{"max":"f"}},"sort":{"m":"asc"}}`,
			`[{"kind":"b","m":-2},{"kind":null,"m":0.25},{"kind":"a","m":1.5}]`)
		f(`{"columns":["kind"],"summaries":{"m":{"max":"d"}},"sort":[{"m":"desc"}]}`,
			`[{"kind":"a","m":"2024-01-03T00:00:00Z"},{"kind":"b","m":null},{"kind":null,"m":null}]`)
		f(`{"columns":["kind"],"sort":[{"kind":"desc"}]}`, `[{"kind":"b"},{"kind":"a"},{"kind":null}]`)
		f(`{"columns":["kind"],"summaries":{"c":{"count":"*"},"s":{"sum":"n"}},"summariesFilter":{"s":{"$ge":4}}}`, `[{"c":2,"kind":"a","s":4},{"c":1,"kind":null,"s":7}]`)
		f(`{"columns":["who.name"],"summaries":{"c":{"count":"*"}},"summariesFilter":{"who":{"name":{"$startsWith":"A"}}}}`, `[{"c":2,"who":{"name":"Ann"}}]`)
		f(`{"columns":["who"],"summariesFilter":{"who.id":"bob"}}`, `[{"who":{"id":"bob"}}]`)
		f(`{"columns":["kind"],"summariesFilter":{"$existsNot":"kind"}}`, `[{"kind":null}]`)
		f(`{"columns":["kind"],"page":{"size":1},"sort":{"kind":"desc"}}`, `[{"kind":"b"}]`)
	}
}

func TestSummarizeMultipleGroupsWholeList(t *testing.T) {
	src := sumTestSource("store")
	got := summarizeJSON(t, src, `{"columns":["tags"],"summaries":{"c":{"count":"*"}}}`)
	want := `[{"c":1,"tags":["b"]},{"c":1,"tags":["x","y"]},{"c":3,"tags":null}]`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// codedDense is a dense value store that also codes its strings, as the
// engine's column stores do for columns of few values.
type codedDense struct{ *memDense }

func (d codedDense) Codes() ([]uint16, []codec.Value, bool) {
	if d.strs == nil {
		return nil, nil, false
	}
	index := map[string]uint16{}
	var vals []codec.Value
	codes := make([]uint16, len(d.strs))
	for row, s := range d.strs {
		if !d.present.Contains(uint32(row)) {
			continue
		}
		k, ok := index[s]
		if !ok {
			vals = append(vals, codec.String(s))
			k = uint16(len(vals))
			index[s] = k
		}
		codes[row] = k
	}
	return codes, vals, true
}

// codedSource is a memSource whose dense stores have codes.
type codedSource struct{ *memSource }

func (s codedSource) Values(c *Column) (ColumnValues, error) {
	v, err := s.memSource.Values(c)
	if d, ok := v.(*memDense); ok {
		return codedDense{d}, err
	}
	return v, err
}

// TestSummarizeCodesOnEveryCore groups more candidates than foldCodes
// folds in one goroutine, with float values whose sums depend on the
// order they are added in: the answer must be the one of the path that
// reads every row's values one by one.
func TestSummarizeCodesOnEveryCore(t *testing.T) {
	// Four cores' worth of fold workers, whatever this machine has.
	defer func(old chan struct{}) { foldWorkers = old }(foldWorkers)
	foldWorkers = make(chan struct{}, 3)
	const n = parallelFoldRows + 4321
	things, _ := sumTestTables()
	build := func(dense bool) *memSource {
		src := &memSource{t: things, rows: map[uint32]*codec.Record{}, dense: dense}
		for i := range n {
			h := uint64(i) * 0x9e3779b97f4a7c15
			r := &codec.Record{ID: "r" + strconv.Itoa(i), Version: 1}
			r.Set(1, codec.String("k"+strconv.Itoa(int(h>>59)%20)))
			r.Set(2, codec.Int(int64(h>>40)%1000-500))
			r.Set(3, codec.Float(float64(h>>11)/float64(1<<53)*1000-300.1))
			r.Set(4, codec.Datetime(time.Unix(int64(h>>34), 0).UTC()))
			src.rows[uint32(i)] = r
		}
		return src
	}
	for _, body := range []string{
		`{"columns":["kind"],"summaries":{"c":{"count":"*"},"s":{"sum":"n"},"fs":{"sum":"f"},"fa":{"average":"f"},"lo":{"min":"f"},"hi":{"max":"d"}}}`,
		`{"columns":["kind"],"filter":{"f":{"$lt":400}},"summaries":{"fs":{"sum":"f"},"n":{"max":"n"}}}`,
	} {
		want := summarizeJSON(t, build(false), body)
		if got := summarizeJSON(t, codedSource{build(true)}, body); got != want {
			t.Errorf("%s:\ngot  %s\nwant %s", body, got, want)
		}
	}
}

// TestFoldWorkersAreShared: the fold workers are one pool over all
// summaries: a fold takes what is free without waiting, and gives it back.
func TestFoldWorkersAreShared(t *testing.T) {
	defer func(old chan struct{}) { foldWorkers = old }(foldWorkers)
	foldWorkers = make(chan struct{}, 2)
	a, releaseA := takeFoldWorkers(5)
	if a != 2 {
		t.Fatalf("took %d of 2 free workers", a)
	}
	if b, releaseB := takeFoldWorkers(1); b != 0 {
		t.Fatalf("took %d workers while none was free", b)
	} else {
		releaseB()
	}
	releaseA()
	if c, releaseC := takeFoldWorkers(1); c != 1 {
		t.Fatalf("took %d workers after they were given back", c)
	} else {
		releaseC()
	}
}

// TestFoldGoroutinesTakeSpareCores: a fold runs on the pool's free workers
// and the cores its caller lends it, one goroutine a core at most.
func TestFoldGoroutinesTakeSpareCores(t *testing.T) {
	defer func(old chan struct{}) { foldWorkers = old }(foldWorkers)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	f := func(pool, spare, want int) {
		t.Helper()
		foldWorkers = make(chan struct{}, pool)
		n, release := foldGoroutines(spare)
		defer release()
		if n != want {
			t.Errorf("pool %d, spare %d: %d goroutines, want %d", pool, spare, n, want)
		}
	}
	f(0, 0, 1)
	f(0, 1, 2)
	f(0, 3, 4)
	f(0, 9, 4)
	f(1, 1, 3)
	f(2, 0, 3)
	f(2, 5, 4)
	f(0, -1, 1)
}
