package consensus

import (
	"bytes"
	"errors"
	"testing"
)

// TestCodecRoundTrip frames single commands and batches and decodes them
// back, including empty commands and results.
func TestCodecRoundTrip(t *testing.T) {
	f := func(cmds ...[]byte) {
		t.Helper()
		var p []byte
		if len(cmds) == 1 {
			p = encodeOne(cmds[0])
		} else {
			p = encodeBatch(cmds)
		}
		got, batch, err := decodePayload(p)
		if err != nil || batch != (len(cmds) > 1) || len(got) != len(cmds) {
			t.Fatalf("decode %q: %q, batch %v, %v", p, got, batch, err)
		}
		for i := range cmds {
			if !bytes.Equal(got[i], cmds[i]) {
				t.Fatalf("command %d: %q, want %q", i, got[i], cmds[i])
			}
		}
		res, err := decodeList(encodeList(nil, cmds))
		if err != nil || len(res) != len(cmds) {
			t.Fatalf("results: %q, %v", res, err)
		}
	}
	f([]byte("one"))
	f([]byte{})
	f([]byte("a"), []byte("bc"), []byte{})
	f(bytes.Repeat([]byte{0xff}, 300), []byte{0})
}

// TestCodecCorrupt checks that malformed payloads are refused, never
// misread.
func TestCodecCorrupt(t *testing.T) {
	f := func(p []byte) {
		t.Helper()
		if got, _, err := decodePayload(p); !errors.Is(err, errCorrupt) {
			t.Errorf("decode %q: %q, %v; want errCorrupt", p, got, err)
		}
	}
	f(nil)
	f([]byte{0})
	f([]byte{9, 1, 2})
	f([]byte{kindBatch})
	f([]byte{kindBatch, 0})
	f([]byte{kindBatch, 2, 1, 'a'})
	f([]byte{kindBatch, 1, 5, 'a'})
	f([]byte{kindBatch, 1, 1, 'a', 'b'})
	f([]byte{kindBatch, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
}

// FuzzDecodePayload checks that any payload either fails to decode or
// decodes to commands that frame back to the same bytes.
func FuzzDecodePayload(f *testing.F) {
	f.Add(encodeOne([]byte("x")))
	f.Add(encodeBatch([][]byte{[]byte("a"), {}, []byte("ccc")}))
	f.Add([]byte{kindBatch, 3})
	f.Fuzz(func(t *testing.T, p []byte) {
		cmds, batch, err := decodePayload(p)
		if err != nil {
			return
		}
		var again []byte
		if batch {
			again = encodeBatch(cmds)
		} else {
			again = encodeOne(cmds[0])
		}
		// A uvarint may be written with redundant bytes; the canonical
		// re-encoding must decode to the same commands.
		cmds2, batch2, err := decodePayload(again)
		if err != nil || batch2 != batch || len(cmds2) != len(cmds) {
			t.Fatalf("re-decode of %q: %v", again, err)
		}
		for i := range cmds {
			if !bytes.Equal(cmds[i], cmds2[i]) {
				t.Fatalf("command %d differs", i)
			}
		}
	})
}
