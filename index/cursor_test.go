package index

import (
	"encoding/json"
	"testing"

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

func TestCursorRejectsForgeries(t *testing.T) {
	s := sampleCursor(t)
	f := func(name, c string, secret []byte) {
		t.Helper()
		if _, err := openCursor(c, secret); !IsCursorError(err) {
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
			if !IsCursorError(err) {
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
