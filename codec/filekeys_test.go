package codec

import (
	"bytes"
	"testing"
)

func TestFileChunkKey(t *testing.T) {
	k := FileChunkKey(nil, 7, 3, 9, 2, "f1", 11, 4)
	dk, err := ParseDataKey(k)
	if err != nil {
		t.Fatalf("%x: %v", k, err)
	}
	want := append(append([]byte{0, 0, 0, 2}, "f1\x00"...), AppendU64(nil, 11)...)
	want = append(want, 0, 4)
	if dk.DB != 7 || dk.Layer != 3 || dk.Kind != KindFileChunk || dk.Table != 9 || !bytes.Equal(dk.Rest, want) {
		t.Fatalf("parsed as %+v", dk)
	}
	// Chunks of one content are adjacent and in order under its prefix.
	p := FileContentPrefix(nil, 7, 3, 9, 2, "f1", 11)
	if !bytes.HasPrefix(k, p) || bytes.Compare(FileChunkKey(nil, 7, 3, 9, 2, "f1", 11, 3), k) >= 0 {
		t.Fatal("chunk keys must share the content prefix, in chunk order")
	}
	// A file id that is a prefix of another does not share its contents.
	if bytes.HasPrefix(FileChunkKey(nil, 7, 3, 9, 2, "f10", 11, 0), FileContentPrefix(nil, 7, 3, 9, 2, "f1", 0)[:len(p)-8]) {
		t.Fatal("file ids must be terminated")
	}
	for _, bad := range [][]byte{
		k[:len(k)-1], // chunk cut short
		append(TablePrefix(nil, 7, 3, KindFileChunk, 9), 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), // empty file id
		append(TablePrefix(nil, 7, 3, KindFileChunk, 9), append([]byte{0, 0, 0, 2, 'a', 0, 'b', 0}, make([]byte, 10)...)...),
	} {
		if _, err := ParseDataKey(bad); err == nil {
			t.Errorf("%x parsed", bad)
		}
	}
}
