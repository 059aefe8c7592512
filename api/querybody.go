package api

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Every page of a query, a cursor walk's included, starts with its body,
// which encoding/json decodes through reflection with a decoder of its own:
// about as much CPU as encoding a cached page of records. Bodies come in a
// few plain shapes, so readQueryBody reads those with one scan, which
// checks the JSON as it goes and decodes the filter, sort and columns for
// the index package (a value with a string of escapes or not in UTF-8 is
// checked, then left to the index package to decode), and leaves
// everything else to decodeStrict: keys in another case, escapes in the
// body's own keys and strings, numbers other than small integers in the
// page, nulls inside the page, repeated or unknown keys, nesting deeper
// than maxScanDepth, and every error. For a body it reads,
// the scan gives what decodeStrict gives, and values as the index package
// decodes them (FuzzQueryBody holds it to that).

// maxScanDepth bounds the nesting of the values the scan decodes; deeper
// values are left to encoding/json.
const maxScanDepth = 64

// readQueryBody reads the body of a query into body; an empty body is {}.
// The raw members of body share the request's buffer: they are valid
// until the handler returns.
func (r *request) readQueryBody(body *queryBody) error {
	b := r.body()
	if len(b) == 0 {
		return nil
	}
	if scanQueryBody(b, body) {
		return nil
	}
	*body = queryBody{}
	return decodeStrict(b, body)
}

// scanQueryBody reads b into body and reports whether it could; when it
// could not, body holds a partial result. The raw members share b.
func scanQueryBody(b []byte, body *queryBody) bool {
	s := bodyScan{b: b}
	var seen [5]bool
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "columns":
			return once(&seen[0]) && s.decode(&body.Columns, &body.columns)
		case "filter":
			return once(&seen[1]) && s.decode(&body.Filter, &body.filter)
		case "sort":
			return once(&seen[2]) && s.decode(&body.Sort, &body.sort)
		case "page":
			return once(&seen[3]) && s.page(&body.Page)
		case "consistency":
			if !once(&seen[4]) {
				return false
			}
			v, ok := s.str()
			body.Consistency = &v
			return ok
		}
		return false
	})
	s.space()
	body.decoded = ok && s.i == len(b)
	return body.decoded
}

// once marks a key seen and reports whether it was not before.
func once(seen *bool) bool {
	if *seen {
		return false
	}
	*seen = true
	return true
}

// bodyScan reads JSON text from b, byte i on, checking it as it goes.
type bodyScan struct {
	b []byte
	i int
	// plain is false once value has met a string it does not decode.
	plain bool
}

// notDecoded stands for a value that the scan checked but did not decode.
type notDecoded struct{}

// space skips white space and returns the next byte, 0 at the end.
func (s *bodyScan) space() byte {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return c
		}
	}
	return 0
}

// next skips white space and reads byte c, reporting whether it was there.
func (s *bodyScan) next(c byte) bool {
	if s.space() != c {
		return false
	}
	s.i++
	return true
}

// object reads an object, calling member with each key (of no escapes)
// to read its value; false from member stops it.
func (s *bodyScan) object(member func(key []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		s.space()
		key, ok := s.plainString()
		if !ok || !s.next(':') || !member(key) {
			return false
		}
		switch s.space() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// plainString reads a string of no escapes or control characters at s.i
// and returns its bytes.
func (s *bodyScan) plainString() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for i := start; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			return s.b[start:i], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string value of no escapes, in valid UTF-8 (which
// encoding/json would not change).
func (s *bodyScan) str() (string, bool) {
	s.space()
	v, ok := s.plainString()
	return string(v), ok && utf8.Valid(v)
}

// decode reads any value into raw, as json.RawMessage keeps it, and into
// v, as encoding/json decodes it into an any with UseNumber.
func (s *bodyScan) decode(raw *json.RawMessage, v *any) bool {
	s.space()
	start := s.i
	s.plain = true
	var ok bool
	*v, ok = s.value(0)
	*raw = s.b[start:s.i:s.i]
	if !s.plain {
		*v = notDecoded{}
	}
	return ok
}

// value reads the value at s.i, depth levels down, as encoding/json
// decodes it into an any with UseNumber.
func (s *bodyScan) value(depth int) (any, bool) {
	if depth > maxScanDepth {
		return nil, false
	}
	c := s.space()
	switch c {
	case '{':
		s.i++
		m := map[string]any{}
		if s.next('}') {
			return m, true
		}
		for {
			s.space()
			k, ok := s.string()
			if !ok || !s.next(':') {
				return nil, false
			}
			if m[k], ok = s.value(depth + 1); !ok {
				return nil, false
			}
			switch s.space() {
			case ',':
				s.i++
			case '}':
				s.i++
				return m, true
			default:
				return nil, false
			}
		}
	case '[':
		s.i++
		l := []any{}
		if s.next(']') {
			return l, true
		}
		for {
			v, ok := s.value(depth + 1)
			if !ok {
				return nil, false
			}
			l = append(l, v)
			switch s.space() {
			case ',':
				s.i++
			case ']':
				s.i++
				return l, true
			default:
				return nil, false
			}
		}
	case '"':
		return s.string()
	}
	return s.scalar(c)
}

// scalar reads the literal or number at s.i, whose first byte is c, as
// encoding/json decodes it into an any with UseNumber.
func (s *bodyScan) scalar(c byte) (any, bool) {
	switch c {
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	case 'n':
		return nil, s.literal("null")
	}
	start := s.i
	if !s.number() {
		return nil, false
	}
	return json.Number(s.b[start:s.i]), true
}

// string reads the string at s.i, and decodes it when it has no escapes
// and is valid UTF-8 (which encoding/json would not change); otherwise it
// clears s.plain.
func (s *bodyScan) string() (string, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	start := s.i + 1
	escaped := false
	for i := start; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			v := s.b[start:i]
			if escaped || !utf8.Valid(v) {
				s.plain = false
				return "", true
			}
			return string(v), true
		case c < 0x20:
			return "", false
		case c == '\\':
			escaped = true
			i++
			if i == len(s.b) {
				return "", false
			}
			switch s.b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(s.b) || !isHex4(s.b[i+1:i+5]) {
					return "", false
				}
				i += 4
			default:
				return "", false
			}
		}
	}
	return "", false
}

// isHex4 reports whether b holds four hexadecimal digits.
func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// literal reads the word w at s.i.
func (s *bodyScan) literal(w string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(w)) {
		return false
	}
	s.i += len(w)
	return true
}

// number reads a JSON number at s.i.
func (s *bodyScan) number() bool {
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case !s.digits():
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits reads one or more decimal digits at s.i.
func (s *bodyScan) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// page reads the page object; null is no page.
func (s *bodyScan) page(dst **queryPage) bool {
	if s.space() == 'n' {
		*dst = nil
		return s.literal("null")
	}
	p := &queryPage{}
	*dst = p
	var seen [6]bool
	return s.object(func(key []byte) bool {
		var str **string
		switch string(key) {
		case "size":
			return once(&seen[0]) && s.integer(&p.Size)
		case "offset":
			return once(&seen[1]) && s.integer(&p.Offset)
		case "after":
			str = &p.After
		case "before":
			str = &p.Before
		case "start":
			str = &p.Start
		case "end":
			str = &p.End
		default:
			return false
		}
		if *str != nil {
			return false
		}
		v, ok := s.str()
		*str = &v
		return ok
	})
}

// integer reads an integer of at most nine digits, with no leading zero.
func (s *bodyScan) integer(dst **int) bool {
	s.space()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start := s.i
	n, digits := 0, 0
	for ; s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9'; s.i++ {
		n = n*10 + int(s.b[s.i]-'0')
		digits++
	}
	if digits == 0 || digits > 9 || (digits > 1 && s.b[start] == '0') {
		return false
	}
	if s.i < len(s.b) {
		if c := s.b[s.i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	if neg {
		n = -n
	}
	*dst = &n
	return true
}
