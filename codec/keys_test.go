package codec

import (
	"bytes"
	"testing"
)

func TestKeyFamiliesParse(t *testing.T) {
	f := func(key []byte, kind byte, table uint32, rest []byte) {
		t.Helper()
		k, err := ParseDataKey(key)
		if err != nil {
			t.Fatalf("%x: %v", key, err)
		}
		if k.DB != 7 || k.Layer != 3 || k.Kind != kind || k.Table != table || !bytes.Equal(k.Rest, rest) {
			t.Fatalf("%x parsed as %+v", key, k)
		}
	}
	f(RecordKey(nil, 7, 3, 9, 42), KindRecordCur, 9, []byte{0, 0, 0, 42})
	f(RecordHistKey(nil, 7, 3, 9, 42, 5), KindRecordHist, 9, append([]byte{0, 0, 0, 42}, AppendU64(nil, ^uint64(5))...))
	f(IDMapKey(nil, 7, 3, 9, "rec_a"), KindIDMapCur, 9, []byte("rec_a\x00"))
	f(IDMapHistKey(nil, 7, 3, 9, "a", 1), KindIDMapHist, 9, append([]byte("a\x00"), AppendU64(nil, ^uint64(1))...))
	pid, err := PostingBitmapID(nil, 4, String("x"))
	if err != nil {
		t.Fatal(err)
	}
	cur := BitmapKey(nil, 7, 3, 9, pid, 2)
	f(cur, KindBitmapCur, 9, append(append([]byte(nil), pid...), 0, 2))
	hist := BitmapHistKey(nil, 7, 3, 9, pid, 2, 11)
	f(hist, KindBitmapHist, 9, append(append(append([]byte(nil), pid...), 0, 2), AppendU64(nil, 11)...))
	chunk, seq, err := ParseHistSeq(hist)
	if err != nil || chunk != 2 || seq != 11 {
		t.Fatalf("ParseHistSeq = %d %d %v", chunk, seq, err)
	}
	// Newer versions sort first under one row, so a seek to ^s finds the
	// newest version at or before s.
	if bytes.Compare(RecordHistKey(nil, 1, 1, 1, 1, 9), RecordHistKey(nil, 1, 1, 1, 1, 3)) >= 0 {
		t.Fatal("hist keys must sort newest first")
	}
	// Every key of a layer lies inside its prefix range, and layers of one
	// database inside the database's.
	for _, k := range [][]byte{cur, hist, RecordKey(nil, 7, 3, 0, 0)} {
		lp := LayerPrefix(7, 3)
		if !bytes.HasPrefix(k, lp) || bytes.Compare(k, PrefixEnd(lp)) >= 0 || !bytes.HasPrefix(k, DatabasePrefix(7)) {
			t.Fatalf("%x outside its layer range", k)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	f := func(in, want []byte) {
		t.Helper()
		if got := PrefixEnd(in); !bytes.Equal(got, want) {
			t.Fatalf("PrefixEnd(%x) = %x, want %x", in, got, want)
		}
	}
	f([]byte{1, 2}, []byte{1, 3})
	f([]byte{1, 0xFF}, []byte{2})
	f([]byte{0xFF, 0xFF}, nil)
}

// FuzzParseDataKey: garbage never panics, and a parsed key's parts rebuild
// into the same bytes.
func FuzzParseDataKey(f *testing.F) {
	f.Add(RecordKey(nil, 1, 2, 3, 4))
	f.Add(RecordHistKey(nil, 1, 2, 3, 4, 5))
	f.Add(IDMapKey(nil, 1, 2, 3, "rec_x"))
	f.Add(IDMapHistKey(nil, 1, 2, 3, "rec_x", 9))
	f.Add(BitmapKey(nil, 1, 2, 3, LiveBitmapID(), 0))
	f.Add(BitmapHistKey(nil, 1, 2, 3, ExistsBitmapID(4), 1, 2))
	f.Add([]byte{NSData, 0, 0})
	f.Fuzz(func(t *testing.T, key []byte) {
		k, err := ParseDataKey(key)
		if err != nil {
			return
		}
		rebuilt := append(TablePrefix(nil, k.DB, k.Layer, k.Kind, k.Table), k.Rest...)
		if !bytes.Equal(rebuilt, key) {
			t.Fatalf("%x rebuilt as %x", key, rebuilt)
		}
	})
}
