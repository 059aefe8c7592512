package consensus

import (
	"bytes"
	"errors"
	"testing"
)

// TestCodecRoundTrip frames commands and decodes them back.
func TestCodecRoundTrip(t *testing.T) {
	f := func(cmd []byte) {
		t.Helper()
		got, err := decodePayload(encodeOne(cmd))
		if err != nil || !bytes.Equal(got, cmd) {
			t.Fatalf("decode of %q: %q, %v", cmd, got, err)
		}
	}
	f([]byte("one"))
	f([]byte{})
	f(bytes.Repeat([]byte{0xff}, 300))
}

// TestCodecCorrupt checks that malformed payloads, and kinds this version
// does not know, are refused rather than misread.
func TestCodecCorrupt(t *testing.T) {
	f := func(p []byte) {
		t.Helper()
		if got, err := decodePayload(p); !errors.Is(err, errCorrupt) {
			t.Errorf("decode %q: %q, %v; want errCorrupt", p, got, err)
		}
	}
	f(nil)
	f([]byte{0})
	f([]byte{2, 1, 'a'})
	f([]byte{0xff})
}

// FuzzDecodePayload checks that any payload either fails to decode or
// decodes to the command that frames back to the same bytes.
func FuzzDecodePayload(f *testing.F) {
	f.Add(encodeOne([]byte("x")))
	f.Add([]byte{2, 3})
	f.Fuzz(func(t *testing.T, p []byte) {
		cmd, err := decodePayload(p)
		if err != nil {
			return
		}
		if again := encodeOne(cmd); !bytes.Equal(again, p) {
			t.Fatalf("%q decoded to %q, which frames as %q", p, cmd, again)
		}
	})
}
