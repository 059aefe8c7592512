package api

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Every page of a query, a cursor walk's included, starts with its body,
// which encoding/json decodes through reflection with a decoder of its own:
// about as much CPU as encoding a cached page of records. Bodies come in a
// few plain shapes, so readQueryBody reads those with one scan and leaves
// everything else to decodeStrict: keys in another case, escapes in keys
// or strings, numbers other than small integers, nulls inside the page,
// repeated or unknown keys, and every error. For a body it reads, the scan
// gives what decodeStrict gives (FuzzQueryBody holds it to that).

// readQueryBody reads the body of a query into body; an empty body is {}.
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
// could not, body holds a partial result.
func scanQueryBody(b []byte, body *queryBody) bool {
	if !json.Valid(b) {
		return false
	}
	// The raw members share one copy of the body: decodeStrict's are
	// copies too, which outlive the request's buffer.
	s := bodyScan{b: bytes.Clone(b)}
	var seen [5]bool
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "columns":
			return once(&seen[0]) && s.raw(&body.Columns)
		case "filter":
			return once(&seen[1]) && s.raw(&body.Filter)
		case "sort":
			return once(&seen[2]) && s.raw(&body.Sort)
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
}

// once marks a key seen and reports whether it was not before.
func once(seen *bool) bool {
	if *seen {
		return false
	}
	*seen = true
	return true
}

// bodyScan reads a JSON text known to be valid from b, byte i on.
type bodyScan struct {
	b []byte
	i int
}

// space skips white space and returns the next byte.
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

// object reads an object, calling member with each key (of no escapes)
// to read its value; false from member stops it.
func (s *bodyScan) object(member func(key []byte) bool) bool {
	if s.space() != '{' {
		return false
	}
	s.i++
	if s.space() == '}' {
		s.i++
		return true
	}
	for {
		s.space()
		key, ok := s.plainString()
		if !ok {
			return false
		}
		s.space()
		s.i++ // ':'
		if !member(key) {
			return false
		}
		c := s.space()
		s.i++
		if c == '}' {
			return true
		}
	}
}

// plainString reads a string of no escapes at s.i and returns its bytes.
func (s *bodyScan) plainString() ([]byte, bool) {
	if s.b[s.i] != '"' {
		return nil, false
	}
	end := bytes.IndexByte(s.b[s.i+1:], '"')
	v := s.b[s.i+1 : s.i+1+end]
	s.i += end + 2
	return v, bytes.IndexByte(v, '\\') < 0
}

// str reads a string value of no escapes, in valid UTF-8 (which
// encoding/json would not change).
func (s *bodyScan) str() (string, bool) {
	s.space()
	v, ok := s.plainString()
	return string(v), ok && utf8.Valid(v)
}

// raw reads any value into dst, as json.RawMessage keeps it.
func (s *bodyScan) raw(dst *json.RawMessage) bool {
	s.space()
	start := s.i
	s.skip()
	*dst = s.b[start:s.i:s.i]
	return true
}

// skip passes the value at s.i.
func (s *bodyScan) skip() {
	switch s.b[s.i] {
	case '"':
		s.skipString()
	case '{', '[':
		depth := 0
		for {
			switch s.b[s.i] {
			case '"':
				s.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return
			}
		}
	default: // a number, true, false or null
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			s.i++
		}
	}
}

// skipString passes the string at s.i.
func (s *bodyScan) skipString() {
	s.i++
	for s.b[s.i] != '"' {
		if s.b[s.i] == '\\' {
			s.i++
		}
		s.i++
	}
	s.i++
}

// page reads the page object; null is no page.
func (s *bodyScan) page(dst **queryPage) bool {
	if s.space() == 'n' {
		s.i += len("null")
		*dst = nil
		return true
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

// integer reads an integer of at most nine digits.
func (s *bodyScan) integer(dst **int) bool {
	s.space()
	neg := s.b[s.i] == '-'
	if neg {
		s.i++
	}
	n, digits := 0, 0
	for ; s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9'; s.i++ {
		n = n*10 + int(s.b[s.i]-'0')
		digits++
	}
	if digits == 0 || digits > 9 {
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
