package index

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"

	"github.com/coppice-db/coppice/codec"
)

// A cursor is opaque to clients: a version byte, a 16-byte HMAC-SHA256 tag
// under the server's secret, and the deflated JSON of cursorState, all in
// unpadded base64url. It carries everything needed to continue a query: the
// filter, sort and columns as the client sent them, the page size, and the
// positions of the first and last rows of the page it came from.

const cursorVersion = 1

// maxCursorLen bounds what a client can make the server inflate.
const maxCursorLen = 64 << 10

// cursorState is the content of a cursor.
type cursorState struct {
	Filter  json.RawMessage `json:"f,omitempty"`
	Sort    json.RawMessage `json:"s,omitempty"`
	Columns json.RawMessage `json:"c,omitempty"`
	Size    int             `json:"z"`
	Seed    uint64          `json:"r,omitempty"`
	// First and Last are the positions of the first and last rows of the
	// page: ordered encodings of the sort values, then the id.
	First *cursorKey `json:"a,omitempty"`
	Last  *cursorKey `json:"b,omitempty"`
}

type cursorKey struct {
	Values []byte `json:"v,omitempty"`
	ID     string `json:"i"`
}

// CursorError is a cursor that is not one of this server's, or garbled.
type CursorError struct{ Message string }

func (e *CursorError) Error() string { return e.Message }

var errBadCursor = &CursorError{Message: "invalid cursor"}

func encodeKey(k Key) (*cursorKey, error) {
	var b []byte
	for _, v := range k.Values {
		var err error
		if b, err = codec.AppendOrdered(b, v); err != nil {
			return nil, err
		}
	}
	return &cursorKey{Values: b, ID: k.ID}, nil
}

func decodeKey(ck *cursorKey, n int) (*Key, error) {
	if ck == nil {
		return nil, nil
	}
	k := &Key{ID: ck.ID, Values: make([]codec.Value, 0, n)}
	rest := ck.Values
	for i := 0; i < n; i++ {
		v, r, err := codec.DecodeOrdered(rest)
		if err != nil {
			return nil, errBadCursor
		}
		k.Values = append(k.Values, v)
		rest = r
	}
	if len(rest) != 0 {
		return nil, errBadCursor
	}
	return k, nil
}

// flateWriters reuses compressors: a new one allocates hundreds of
// kilobytes, more than the rest of a query.
var flateWriters = sync.Pool{New: func() any {
	w, err := flate.NewWriter(nil, flate.BestSpeed)
	if err != nil {
		panic(err) // only for an invalid level
	}
	return w
}}

// sealCursor encodes and signs a cursor state.
func sealCursor(st *cursorState, secret []byte) (string, error) {
	payload, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	buf.WriteByte(cursorVersion)
	buf.Write(make([]byte, 16))
	w := flateWriters.Get().(*flate.Writer)
	defer flateWriters.Put(w)
	w.Reset(&buf)
	if _, err := w.Write(payload); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	out := buf.Bytes()
	copy(out[1:17], cursorMAC(secret, out[17:]))
	return base64.RawURLEncoding.EncodeToString(out), nil
}

// openCursor checks and decodes a cursor. Anything that is not a cursor this
// server made is a *CursorError.
func openCursor(s string, secret []byte) (*cursorState, error) {
	if len(s) > maxCursorLen {
		return nil, errBadCursor
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(raw) < 17 || raw[0] != cursorVersion {
		return nil, errBadCursor
	}
	if !hmac.Equal(raw[1:17], cursorMAC(secret, raw[17:])) {
		return nil, errBadCursor
	}
	r := flate.NewReader(bytes.NewReader(raw[17:]))
	defer r.Close()
	payload, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, errBadCursor
	}
	var st cursorState
	if err := json.Unmarshal(payload, &st); err != nil || st.Size <= 0 {
		return nil, errBadCursor
	}
	return &st, nil
}

func cursorMAC(secret, data []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(data)
	return m.Sum(nil)[:16]
}

// IsCursorError reports whether err is an invalid cursor.
func IsCursorError(err error) bool {
	var ce *CursorError
	return errors.As(err, &ce)
}
