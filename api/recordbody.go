package api

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Record bodies, a bulk request's thousand records above all, are read by
// one scan of the body that checks the JSON and builds each record's
// map[string]any as it goes, with the values encoding/json gives with
// UseNumber: strings with escapes and invalid UTF-8 decoded as it decodes
// them, numbers as json.Number. encoding/json's Decoder reads each value
// twice (once to find its end, once to decode it) through reflection.
// The scan declines any body not of the plain shape (a record that is
// not an object or null, keys other than the list's, nesting deeper than
// maxScanDepth, and every error), and the caller then decodes the body
// with encoding/json as before, so that errors and statuses are its.
// FuzzRecordBody holds the scan to that.

// recordScan is a bodyScan that decodes records; keys, when not nil,
// remembers the column names seen, so that a thousand records of the same
// columns share their key strings.
type recordScan struct {
	bodyScan
	keys map[string]string
	// elems and members hold the elements of the arrays and the members
	// of the objects being read, innermost last, until each ends and is
	// made a slice or map of its size.
	elems   []any
	members []member
}

// member is a key and value of an object being read.
type member struct {
	key string
	val any
}

// maxKeyCache bounds the column names a recordScan remembers, and
// maxKeyLen their length.
const (
	maxKeyCache = 256
	maxKeyLen   = 64
)

// scanRecord reads b, a whole body, as one record: an object of column
// values or null (nil). It reports false when the scan declines the body.
func scanRecord(b []byte) (map[string]any, bool) {
	s := recordScan{bodyScan: bodyScan{b: b}, elems: make([]any, 0, 8), members: make([]member, 0, 16)}
	rec, ok := s.record()
	s.space()
	return rec, ok && s.i == len(b)
}

// scanRecordList reads b, a whole body, as {"<field>": [records]},
// calling fn with each record (nil for a null) once it is read. An error
// from fn stops the scan and is returned with ok set. Otherwise ok reports
// whether the scan read the whole body; when it did not, the records
// already given to fn are to be dropped and the body decoded by
// encoding/json.
func scanRecordList(b []byte, field string, fn func(map[string]any) error) (ok bool, err error) {
	s := recordScan{bodyScan: bodyScan{b: b}, keys: map[string]string{}}
	if !s.next('{') {
		return false, nil
	}
	s.space()
	if key, ok := s.plainString(); !ok || string(key) != field || !s.next(':') || !s.next('[') {
		return false, nil
	}
	if !s.next(']') {
		for {
			rec, ok := s.record()
			if !ok {
				return false, nil
			}
			if err := fn(rec); err != nil {
				return true, err
			}
			if s.next(']') {
				break
			}
			if !s.next(',') {
				return false, nil
			}
		}
	}
	if !s.next('}') {
		return false, nil
	}
	s.space()
	return s.i == len(b), nil
}

// record reads an object of column values at s.i, or null for nil.
func (s *recordScan) record() (map[string]any, bool) {
	switch s.space() {
	case 'n':
		return nil, s.literal("null")
	case '{':
		return s.object(0)
	}
	return nil, false
}

// object reads an object at s.i, depth levels down. Its members gather on
// s.members, and are put in a map of their number when it ends: a later
// member replaces an earlier one of the same key, as in encoding/json.
func (s *recordScan) object(depth int) (map[string]any, bool) {
	s.i++ // '{'
	if s.next('}') {
		return map[string]any{}, true
	}
	base := len(s.members)
	for {
		s.space()
		k, ok := s.key()
		if !ok || !s.next(':') {
			return nil, false
		}
		v, ok := s.value(depth + 1)
		if !ok {
			return nil, false
		}
		s.members = append(s.members, member{k, v})
		switch s.space() {
		case ',':
			s.i++
		case '}':
			s.i++
			m := make(map[string]any, len(s.members)-base)
			for _, kv := range s.members[base:] {
				m[kv.key] = kv.val
			}
			clear(s.members[base:])
			s.members = s.members[:base]
			return m, true
		default:
			return nil, false
		}
	}
}

// key reads an object key: with s.keys, the same string as the last time
// it was read when it has no escapes.
func (s *recordScan) key() (string, bool) {
	raw, plain, ok := s.rawText()
	switch {
	case !ok:
		return "", false
	case !plain:
		return string(unescape(raw)), true
	case s.keys == nil || len(raw) > maxKeyLen:
		return string(raw), true
	}
	if k, ok := s.keys[string(raw)]; ok {
		return k, true
	}
	k := string(raw)
	if len(s.keys) < maxKeyCache {
		s.keys[k] = k
	}
	return k, true
}

// value reads the value at s.i, depth levels down, as encoding/json
// decodes it into an any with UseNumber.
func (s *recordScan) value(depth int) (any, bool) {
	if depth > maxScanDepth {
		return nil, false
	}
	c := s.space()
	switch c {
	case '{':
		return s.object(depth)
	case '[':
		return s.array(depth)
	case '"':
		return s.text()
	}
	return s.scalar(c)
}

// array reads an array at s.i, depth levels down. Its elements gather on
// s.elems, and are copied to a slice of their number when it ends.
func (s *recordScan) array(depth int) (any, bool) {
	s.i++ // '['
	if s.next(']') {
		return []any{}, true
	}
	base := len(s.elems)
	for {
		v, ok := s.value(depth + 1)
		if !ok {
			return nil, false
		}
		s.elems = append(s.elems, v)
		switch s.space() {
		case ',':
			s.i++
		case ']':
			s.i++
			l := make([]any, len(s.elems)-base)
			copy(l, s.elems[base:])
			clear(s.elems[base:])
			s.elems = s.elems[:base]
			return l, true
		default:
			return nil, false
		}
	}
}

// text reads the string at s.i and decodes it as encoding/json does:
// escapes decoded, a \u escape of half a surrogate pair that is not
// followed by the other half and each byte that is not part of valid
// UTF-8 replaced by U+FFFD.
func (s *recordScan) text() (string, bool) {
	raw, plain, ok := s.rawText()
	if !ok {
		return "", false
	}
	if plain {
		return string(raw), true
	}
	return string(unescape(raw)), true
}

// rawText reads the string at s.i, checking its escapes, and returns what
// is between its quotes; plain reports that it has no escapes and is valid
// UTF-8, that it decodes to itself.
func (s *recordScan) rawText() (raw []byte, plain, ok bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, false
	}
	start := s.i + 1
	escaped, ascii := false, true
	for i := start; i < len(s.b); i++ {
		for i < len(s.b) && !textStop[s.b[i]] {
			i++
		}
		if i == len(s.b) {
			break
		}
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			raw = s.b[start:i]
			return raw, !escaped && (ascii || utf8.Valid(raw)), true
		case c >= utf8.RuneSelf:
			ascii = false
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			escaped = true
			i++
			if i == len(s.b) {
				return nil, false, false
			}
			switch s.b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(s.b) || !isHex4(s.b[i+1:i+5]) {
					return nil, false, false
				}
				i += 4
			default:
				return nil, false, false
			}
		}
	}
	return nil, false, false
}

// textStop marks the bytes that rawText looks at: the end of a string,
// escapes, control characters and bytes of UTF-8 beyond ASCII. It passes
// over the others without a look.
var textStop = func() (t [256]bool) {
	for c := range t {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf
	}
	return t
}()

// unescape decodes the contents of a JSON string whose escapes text
// checked.
func unescape(v []byte) []byte {
	out := make([]byte, 0, len(v)+utf8.UTFMax)
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case c == '\\':
			switch v[i+1] {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(v[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(v) && v[i] == '\\' && v[i+1] == 'u' {
						if pair := utf16.DecodeRune(r, hex4(v[i+2:])); pair != unicode.ReplacementChar {
							r = pair
							i += 6
						} else {
							r = unicode.ReplacementChar
						}
					} else {
						r = unicode.ReplacementChar
					}
				}
				out = utf8.AppendRune(out, r)
				continue
			default: // '"', '\\', '/'
				out = append(out, v[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(v[i:])
			out = utf8.AppendRune(out, r)
			i += size
		}
	}
	return out
}

// hex4 is the value of the four hexadecimal digits that b starts with.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
