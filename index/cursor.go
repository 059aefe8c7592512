package index

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/flate"

	"github.com/coppice-db/coppice/codec"
)

// A cursor is opaque to clients: a version byte, a 16-byte HMAC-SHA256 tag
// under the server's secret, and the cursorState, all in unpadded
// base64url. It carries everything needed to continue a query: the filter,
// sort and columns as the client sent them, the page size, and the
// positions of the first and last rows of the page it came from.
//
// Cursors are made in version 2, a binary state (appendState), or in
// version 3, the same deflated when it is long (long filters); the tag
// covers the version byte and the payload. Version 1, deflated JSON under a
// tag of the payload alone, still opens. Opening a version 2 cursor costs
// a few hundred nanoseconds, not the microseconds of inflating and
// decoding JSON, so that a page reached by cursor costs what a first page
// does.

const (
	cursorDeflatedJSON = 1
	cursorBinary       = 2
	cursorDeflated     = 3
)

// cursorDeflateFrom is the payload size from which a cursor is deflated.
const cursorDeflateFrom = 512

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

// errBadCursor is a cursor that is not one of this server's, or garbled.
var errBadCursor = &InputError{Message: "invalid cursor"}

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

// flateReaders reuses decompressors, which allocate tens of kilobytes.
var flateReaders = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

// sealCursor encodes and signs a cursor state.
func sealCursor(st *cursorState, secret []byte) (string, error) {
	out := make([]byte, 17, 64+len(st.Filter)+len(st.Sort)+len(st.Columns))
	out[0] = cursorBinary
	out = appendState(out, st)
	if len(out)-17 >= cursorDeflateFrom {
		var buf bytes.Buffer
		buf.Write(out[:17])
		w := flateWriters.Get().(*flate.Writer)
		defer flateWriters.Put(w)
		w.Reset(&buf)
		if _, err := w.Write(out[17:]); err != nil {
			return "", err
		}
		if err := w.Close(); err != nil {
			return "", err
		}
		out = buf.Bytes()
		out[0] = cursorDeflated
	}
	copy(out[1:17], cursorMAC(secret, out[:1], out[17:]))
	return base64.RawURLEncoding.EncodeToString(out), nil
}

// openCursor checks and decodes a cursor. Anything that is not a cursor this
// server made is a *CursorError.
func openCursor(s string, secret []byte) (*cursorState, error) {
	if len(s) > maxCursorLen {
		return nil, errBadCursor
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(raw) < 17 {
		return nil, errBadCursor
	}
	version := raw[:1]
	if raw[0] == cursorDeflatedJSON {
		version = nil
	}
	if !hmac.Equal(raw[1:17], cursorMAC(secret, version, raw[17:])) {
		return nil, errBadCursor
	}
	payload := raw[17:]
	if raw[0] == cursorDeflatedJSON || raw[0] == cursorDeflated {
		if payload, err = inflate(payload); err != nil {
			return nil, errBadCursor
		}
	}
	st := &cursorState{}
	switch raw[0] {
	case cursorBinary, cursorDeflated:
		err = readState(payload, st)
	case cursorDeflatedJSON:
		err = json.Unmarshal(payload, st)
	default:
		err = errBadCursor
	}
	if err != nil || st.Size <= 0 {
		return nil, errBadCursor
	}
	return st, nil
}

// inflate decompresses a cursor payload, up to 1 MiB.
func inflate(b []byte) ([]byte, error) {
	r := flateReaders.Get().(io.ReadCloser)
	defer flateReaders.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(b), nil); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(r, 1<<20))
}

// appendState appends the binary form of st: the filter, sort and columns
// as length-prefixed bytes, the size and seed as uvarints, then each of
// First and Last as a presence byte and, when present, its length-prefixed
// values and id.
func appendState(dst []byte, st *cursorState) []byte {
	dst = appendBytes(dst, st.Filter)
	dst = appendBytes(dst, st.Sort)
	dst = appendBytes(dst, st.Columns)
	dst = binary.AppendUvarint(dst, uint64(st.Size))
	dst = binary.AppendUvarint(dst, st.Seed)
	for _, k := range []*cursorKey{st.First, st.Last} {
		if k == nil {
			dst = append(dst, 0)
			continue
		}
		dst = append(dst, 1)
		dst = appendBytes(dst, k.Values)
		dst = appendBytes(dst, []byte(k.ID))
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// readState decodes what appendState wrote; every byte must be used.
func readState(b []byte, st *cursorState) error {
	r := stateReader{b: b}
	st.Filter = r.bytes()
	st.Sort = r.bytes()
	st.Columns = r.bytes()
	st.Size = int(min(r.uvarint(), 1<<31))
	st.Seed = r.uvarint()
	for _, k := range []**cursorKey{&st.First, &st.Last} {
		switch r.byte() {
		case 0:
		case 1:
			*k = &cursorKey{Values: r.bytes(), ID: string(r.bytes())}
		default:
			r.bad = true
		}
	}
	if r.bad || len(r.b) != 0 {
		return errBadCursor
	}
	return nil
}

// stateReader reads a binary cursor state; a short or garbled one sets bad.
type stateReader struct {
	b   []byte
	bad bool
}

func (r *stateReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) byte() byte {
	if len(r.b) == 0 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// bytes reads a length-prefixed byte string; an empty one is nil.
func (r *stateReader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.bad, r.b = true, nil
		return nil
	}
	if n == 0 {
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// cursorMAC is the tag of a cursor: of its version byte (from version 2)
// and its payload.
func cursorMAC(secret, version, data []byte) []byte {
	p := keyedMACs.Load()
	if p == nil || !bytes.Equal(p.secret, secret) {
		key := bytes.Clone(secret)
		p = &macPool{secret: key}
		p.pool.New = func() any { return hmac.New(sha256.New, key) }
		keyedMACs.Store(p)
	}
	m := p.pool.Get().(hash.Hash)
	m.Reset()
	m.Write(version)
	m.Write(data)
	out := m.Sum(make([]byte, 0, sha256.Size))
	p.pool.Put(m)
	return out[:16]
}

// macPool keeps MACs keyed with one secret: making one hashes the key
// into its two pads and allocates, which costs more than the tag of a
// cursor, while resetting a used one restores its keyed state.
type macPool struct {
	secret []byte
	pool   sync.Pool
}

// keyedMACs holds the MACs of the last secret used: a server signs every
// cursor with one.
var keyedMACs atomic.Pointer[macPool]

// isCursorError reports whether err is an invalid cursor.
func isCursorError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie) && ie.Message == errBadCursor.Message
}
