package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// The cursor walks read each page as the PostgreSQL walk reads its rows:
// the whole answer, split into its records (each copied out, as pgx copies
// each row's values), and the cursor taken from it. A general JSON decoder
// would cost the client more than the server spends on the page (about
// 16 µs a KiB with encoding/json), and the PostgreSQL client decodes a
// length-prefixed binary protocol; so the walk reads the answer in one
// pass of its own, which checks the JSON's structure as it goes.

// pageAnswer is what a walk takes from a query answer.
type pageAnswer struct {
	cursor  string
	more    bool
	records [][]byte // each record's JSON, copied out of the answer
}

// readPage reads a query answer: {"meta":{"page":{"cursor","more",...}},
// "records":[...]}. Other keys are skipped; malformed JSON is an error.
func readPage(b []byte) (pageAnswer, error) {
	var out pageAnswer
	p := pageReader{b: b}
	err := p.object(func(key []byte) error {
		switch string(key) {
		case "meta":
			return p.object(func(key []byte) error {
				if string(key) != "page" {
					return p.skip()
				}
				return p.object(func(key []byte) error {
					switch string(key) {
					case "cursor":
						s, err := p.str()
						if err != nil {
							return err
						}
						return json.Unmarshal(s, &out.cursor)
					case "more":
						start := p.i
						if err := p.skip(); err != nil {
							return err
						}
						out.more = string(b[start:p.i]) == "true"
					default:
						return p.skip()
					}
					return nil
				})
			})
		case "records":
			return p.array(func() error {
				start := p.i
				if err := p.skip(); err != nil {
					return err
				}
				out.records = append(out.records, bytes.Clone(b[start:p.i]))
				return nil
			})
		}
		return p.skip()
	})
	if err != nil {
		return out, err
	}
	if p.space(); p.i != len(b) {
		return out, p.fail("data after the answer")
	}
	return out, nil
}

// pageReader reads one JSON text from b, from byte i on.
type pageReader struct {
	b []byte
	i int
}

// errPageEnd is an answer cut short.
var errPageEnd = errors.New("answer ends early")

func (p *pageReader) fail(what string) error {
	return fmt.Errorf("malformed answer at byte %d: %s", p.i, what)
}

// space skips white space.
func (p *pageReader) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next skips white space and returns the byte there.
func (p *pageReader) next() (byte, error) {
	p.space()
	if p.i == len(p.b) {
		return 0, errPageEnd
	}
	return p.b[p.i], nil
}

// expect consumes the byte c.
func (p *pageReader) expect(c byte) error {
	got, err := p.next()
	if err != nil {
		return err
	}
	if got != c {
		return p.fail(fmt.Sprintf("%q where %q belongs", got, c))
	}
	p.i++
	return nil
}

// object reads an object, calling field with each key; field reads the
// value.
func (p *pageReader) object(field func(key []byte) error) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	if c, err := p.next(); err != nil {
		return err
	} else if c == '}' {
		p.i++
		return nil
	}
	for {
		key, err := p.str()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		if err := field(key[1 : len(key)-1]); err != nil {
			return err
		}
		c, err := p.next()
		if err != nil {
			return err
		}
		p.i++
		switch c {
		case ',':
		case '}':
			return nil
		default:
			p.i--
			return p.fail("an object's members not separated by ','")
		}
	}
}

// array reads an array, calling elem to read each element.
func (p *pageReader) array(elem func() error) error {
	if err := p.expect('['); err != nil {
		return err
	}
	if c, err := p.next(); err != nil {
		return err
	} else if c == ']' {
		p.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		c, err := p.next()
		if err != nil {
			return err
		}
		p.i++
		switch c {
		case ',':
		case ']':
			return nil
		default:
			p.i--
			return p.fail("an array's elements not separated by ','")
		}
	}
}

// str reads a string and returns it with its quotes.
func (p *pageReader) str() ([]byte, error) {
	if err := p.expect('"'); err != nil {
		return nil, err
	}
	start := p.i - 1
	b := p.b
	for i := p.i; i < len(b); {
		// Text is mostly plain: pass it eight bytes at a time.
		for i+8 <= len(b) && plainBytes(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i == len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			p.i = i + 1
			return b[start:p.i], nil
		case c == '\\':
			i += 2
		case c < 0x20:
			p.i = i
			return nil, p.fail("a control character in a string")
		default:
			i++
		}
	}
	return nil, errPageEnd
}

// Byte-wise constants of plainBytes.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainBytes reports whether none of the eight bytes of x ends a string,
// starts an escape or is a control character. (v-ones)&^v sets the high
// bit of a byte when some byte of v is zero, and (x-0x20s)&^x when some
// byte of x is below 0x20: exact as to whether there is one, which is all
// this asks.
func plainBytes(x uint64) bool {
	q, bs := x^(ones*'"'), x^(ones*'\\')
	return ((x-ones*0x20)&^x|(q-ones)&^q|(bs-ones)&^bs)&highs == 0
}

// skip reads any value.
func (p *pageReader) skip() error {
	c, err := p.next()
	if err != nil {
		return err
	}
	switch {
	case c == '{':
		return p.object(func([]byte) error { return p.skip() })
	case c == '[':
		return p.array(p.skip)
	case c == '"':
		_, err := p.str()
		return err
	case c == '-' || c >= '0' && c <= '9' || c == 't' || c == 'f' || c == 'n':
		start := p.i
		for p.i < len(p.b) {
			switch p.b[p.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return p.literal(p.b[start:p.i])
			}
			p.i++
		}
		return p.literal(p.b[start:p.i])
	}
	return p.fail(fmt.Sprintf("%q where a value belongs", c))
}

// literal checks a number, true, false or null.
func (p *pageReader) literal(s []byte) error {
	switch string(s) {
	case "true", "false", "null":
		return nil
	}
	if !isNumber(s) {
		return p.fail(fmt.Sprintf("%q is not a value", s))
	}
	return nil
}

// isNumber reports whether s is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func isNumber(s []byte) bool {
	i := 0
	digits := func() bool {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if !digits() {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}
