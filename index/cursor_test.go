package index

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/klauspost/compress/flate"

	"github.com/coppice-db/coppice/codec"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

func sampleCursor(t testing.TB) string {
	k, err := encodeKey(Key{Values: []codec.Value{codec.Int(3), codec.String("x"), codec.Null()}, ID: "rec_1"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sealCursor(&cursorState{
		Filter: json.RawMessage(`{"a":{"$gt":1}}`), Sort: json.RawMessage(`[{"a":"desc"}]`),
		Columns: json.RawMessage(`["a","b.*"]`), Size: 20, Seed: 42, First: k, Last: k,
	}, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCursorRoundTrip(t *testing.T) {
	s := sampleCursor(t)
	st, err := openCursor(s, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if string(st.Filter) != `{"a":{"$gt":1}}` || st.Size != 20 || st.Seed != 42 {
		t.Fatalf("decoded %+v", st)
	}
	k, err := decodeKey(st.Last, 3)
	if err != nil || k.ID != "rec_1" || k.Values[0].Int != 3 || k.Values[1].Str != "x" || !k.Values[2].IsNull() {
		t.Fatalf("key %+v, %v", k, err)
	}
	if _, err := decodeKey(st.Last, 2); err == nil {
		t.Fatal("a key with more values than the sort has keys must fail")
	}
}

// TestCursorVersions: short states travel as they are, long ones
// deflated; both open, neither opens as the other version, and a cursor
// of version 1 (deflated JSON) still opens.
func TestCursorVersions(t *testing.T) {
	long := json.RawMessage(`{"$any":[` + strings.Repeat(`{"title":{"$contains":"needle"}},`, 40) + `{"a":1}]}`)
	for _, c := range []struct {
		filter  json.RawMessage
		version byte
	}{{json.RawMessage(`{"a":1}`), cursorBinary}, {long, cursorDeflated}} {
		s, err := sealCursor(&cursorState{Filter: c.filter, Size: 5}, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := base64.RawURLEncoding.DecodeString(s)
		if raw[0] != c.version {
			t.Errorf("filter of %d bytes: version %d, want %d", len(c.filter), raw[0], c.version)
		}
		st, err := openCursor(s, testSecret)
		if err != nil || string(st.Filter) != string(c.filter) {
			t.Fatalf("version %d: %v, %s", c.version, err, st.Filter)
		}
		raw[0] = cursorBinary + cursorDeflated - raw[0]
		if _, err := openCursor(base64.RawURLEncoding.EncodeToString(raw), testSecret); !isCursorError(err) {
			t.Errorf("version %d opened as the other: %v", c.version, err)
		}
	}
	// Version 1: the JSON state deflated, tagged without the version byte.
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	w.Write([]byte(`{"f":{"a":2},"z":7,"b":{"v":"AQI=","i":"r9"}}`))
	w.Close()
	raw := append([]byte{cursorDeflatedJSON}, make([]byte, 16)...)
	raw = append(raw, buf.Bytes()...)
	copy(raw[1:17], cursorMAC(testSecret, nil, raw[17:]))
	st, err := openCursor(base64.RawURLEncoding.EncodeToString(raw), testSecret)
	if err != nil || string(st.Filter) != `{"a":2}` || st.Size != 7 || st.Last.ID != "r9" || string(st.Last.Values) != "\x01\x02" {
		t.Fatalf("version 1: %+v, %v", st, err)
	}
}

func TestCursorRejectsForgeries(t *testing.T) {
	s := sampleCursor(t)
	f := func(name, c string, secret []byte) {
		t.Helper()
		if _, err := openCursor(c, secret); !isCursorError(err) {
			t.Fatalf("%s: err = %v, want a cursor error", name, err)
		}
	}
	f("other server", s, []byte("another secret of the same size!"))
	f("empty", "", testSecret)
	f("not base64", "!!!", testSecret)
	f("truncated", s[:len(s)-3], testSecret)
	for i := 0; i < len(s); i++ {
		b := []byte(s)
		b[i] ^= 0x01
		if _, err := openCursor(string(b), testSecret); err == nil && string(b) != s {
			t.Fatalf("flipping a bit at %d still opens", i)
		}
	}
}

// FuzzOpenCursor: whatever a client sends as a cursor, opening it returns
// a cursor error or a state this server signed; it never panics.
func FuzzOpenCursor(f *testing.F) {
	f.Add(sampleCursor(f))
	f.Add("")
	f.Add("end")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := openCursor(s, testSecret)
		if err != nil {
			if !isCursorError(err) {
				t.Fatalf("non-cursor error %v", err)
			}
			return
		}
		if st.Size <= 0 {
			t.Fatalf("opened a cursor with size %d", st.Size)
		}
		for _, k := range []*cursorKey{st.First, st.Last} {
			if k != nil {
				decodeKey(k, 1)
			}
		}
	})
}

// readCursorQueryValues is readCursorQuery's filter and sort.
func readCursorQueryValues(filter, sort []byte) (Filter, Sort, error) {
	q, err := readCursorQuery(filter, sort)
	if err != nil {
		return Filter{}, Sort{}, err
	}
	return q.filter, q.sort, nil
}

// TestCursorQueries checks that the filter and sort of cursors read
// through the cache read as ReadFilter and ReadSort read them, do not
// alias the cursor's bytes, and that the cache stays bounded.
func TestCursorQueries(t *testing.T) {
	filter, sort := []byte(`{"a":{"$gt":1},"b":"x"}`), []byte(`[{"a":"desc"}]`)
	for range 2 {
		f, s, err := readCursorQueryValues(filter, sort)
		if err != nil {
			t.Fatal(err)
		}
		wf, _ := ReadFilter(filter)
		ws, _ := ReadSort(sort)
		if string(f.JSON()) != string(wf.JSON()) || string(s.JSON()) != string(ws.JSON()) {
			t.Fatalf("read %s %s, want %s %s", f.JSON(), s.JSON(), wf.JSON(), ws.JSON())
		}
	}
	// The same bytes split otherwise are another filter and sort.
	if f, s, err := readCursorQueryValues(filter[:0], append(bytes.Clone(filter), sort...)); err == nil {
		t.Fatalf("read %s %s from a sort that is not one", f.JSON(), s.JSON())
	}
	// A cursor's buffer is the request's: the cache keeps copies.
	mine := bytes.Clone(filter)
	f, _, err := readCursorQueryValues(mine, sort)
	if err != nil {
		t.Fatal(err)
	}
	copy(mine, strings.Repeat(" ", len(mine)))
	if string(f.JSON()) != string(filter) {
		t.Fatalf("cached filter %s changed with the cursor's bytes", f.JSON())
	}
	if f, _, err := readCursorQueryValues(filter, sort); err != nil || string(f.JSON()) != string(filter) {
		t.Fatalf("read %s, %v after the cursor's bytes changed", f.JSON(), err)
	}
	for i := range 2 * maxCursorQueries {
		if _, _, err := readCursorQueryValues([]byte(fmt.Sprintf(`{"n":%d}`, i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	cursorQueries.mu.Lock()
	n := len(cursorQueries.m)
	cursorQueries.mu.Unlock()
	if n > maxCursorQueries {
		t.Fatalf("%d cursor queries kept, at most %d wanted", n, maxCursorQueries)
	}
	// A filter larger than an entry may be is read, and not kept.
	large := []byte(`{"s":"` + strings.Repeat("x", maxCursorQueryBytes) + `"}`)
	if f, _, err := readCursorQueryValues(large, sort); err != nil || string(f.JSON()) != string(large) {
		t.Fatalf("read %.40s…, %v from a large filter", f.JSON(), err)
	}
	cursorQueries.mu.Lock()
	_, kept := cursorQueries.m[string(binary.AppendUvarint(nil, uint64(len(large))))+string(large)+string(sort)]
	cursorQueries.mu.Unlock()
	if kept {
		t.Fatalf("a filter of %d bytes was kept, at most %d wanted", len(large), maxCursorQueryBytes)
	}
}

// TestCursorQueryBinding checks that a cursor's filter and sort are bound
// to a table once for the pages that follow, and bound again to another
// version of the table: its columns, not the first's.
func TestCursorQueryBinding(t *testing.T) {
	filter, sort := []byte(`{"price":{"$gt":1},"tags":{"$includes":"x"}}`), []byte(`{"price":"asc"}`)
	q, err := readCursorQuery(filter, sort)
	if err != nil {
		t.Fatal(err)
	}
	v1, _, _ := filterTestTables("svc")
	b1, err := q.bind(v1)
	if err != nil {
		t.Fatal(err)
	}
	again, err := q.bind(v1)
	if err != nil {
		t.Fatal(err)
	}
	if again != b1 {
		t.Fatal("the same table bound the cursor's query again")
	}
	if q2, _ := readCursorQuery(filter, sort); q2 != q {
		t.Fatal("the next page read another cursor query")
	}
	// A later version of the table: price is another column now.
	v2, _, _ := filterTestTables("svc")
	v2.Columns["price"] = &Column{Path: "price", ID: 40, Type: "float"}
	b2, err := q.bind(v2)
	if err != nil {
		t.Fatal(err)
	}
	if b2 == b1 || b2.order.Keys[0].Column != v2.Columns["price"] {
		t.Fatalf("bound to the new table, the sort reads column %d", b2.order.Keys[0].Column.ID)
	}
	var price *Column
	for _, c := range b2.root.(*andNode).children {
		if r, ok := c.(*rangeNode); ok {
			price = r.preds[0].Column
		}
	}
	if price != v2.Columns["price"] {
		t.Fatalf("bound to the new table, the filter reads column %v", price)
	}
	// A table the filter no longer binds to is an error on every page.
	v3, _, _ := filterTestTables("svc")
	delete(v3.Columns, "tags")
	for range 2 {
		if _, err := q.bind(v3); err == nil {
			t.Fatal("bound a filter of a column the table no longer has")
		}
	}
}

// TestFirstPageBinding checks that a first page read from JSON text binds
// its filter and sort once for the first pages and cursors of the same
// text, keeping copies of the text, and that one built from Go values, or
// a filter that does not bind, keeps nothing.
func TestFirstPageBinding(t *testing.T) {
	cursorQueries.mu.Lock()
	cursorQueries.m = nil
	cursorQueries.mu.Unlock()
	raw, rawSort := []byte(`{"price":{"$gt":2},"tags":{"$includes":"y"}}`), []byte(`{"price":"desc"}`)
	filter, err := ReadFilter(bytes.Clone(raw))
	if err != nil {
		t.Fatal(err)
	}
	sort, err := ReadSort(bytes.Clone(rawSort))
	if err != nil {
		t.Fatal(err)
	}
	v1, _, _ := filterTestTables("svc")
	b1, err := bindFirstPage(v1, filter, sort)
	if err != nil {
		t.Fatal(err)
	}
	// The request's buffer is reused once it is answered.
	clear(filter.raw)
	again, err := ReadFilter(bytes.Clone(raw))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := bindFirstPage(v1, again, sort); err != nil || b != b1 {
		t.Fatalf("the next first page bound its query again (%v)", err)
	}
	q, err := readCursorQuery(raw, rawSort)
	if err != nil {
		t.Fatal(err)
	}
	if string(q.filter.JSON()) != string(raw) || string(q.sort.JSON()) != string(rawSort) {
		t.Fatalf("the cursor reads filter %s and sort %s", q.filter.JSON(), q.sort.JSON())
	}
	if b, err := q.bind(v1); err != nil || b != b1 {
		t.Fatalf("the next page bound the first page's query again (%v)", err)
	}
	// Another version of the table binds again, as a cursor's page does.
	v2, _, _ := filterTestTables("svc")
	if b, err := bindFirstPage(v2, again, sort); err != nil || b == b1 || b.table != v2 {
		t.Fatalf("a first page on another table took the binding of the first (%v)", err)
	}
	// Go values have no text of their own; a filter that does not bind
	// is not kept.
	cursorQueries.mu.Lock()
	n := len(cursorQueries.m)
	cursorQueries.mu.Unlock()
	if _, err := bindFirstPage(v1, FilterOf(map[string]any{"price": map[string]any{"$gt": 3}}), sort); err != nil {
		t.Fatal(err)
	}
	bad, err := ReadFilter([]byte(`{"nope":1}`))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := bindFirstPage(v1, bad, sort); err == nil {
			t.Fatal("bound a filter of a column the table does not have")
		}
	}
	cursorQueries.mu.Lock()
	m := len(cursorQueries.m)
	cursorQueries.mu.Unlock()
	if m != n {
		t.Fatalf("%d entries kept, %d wanted", m, n)
	}
}
