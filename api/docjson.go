package api

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
)

// Records are the bulk of what the service sends, so they are encoded by
// appending to a buffer rather than through maps and encoding/json: the
// output is the same (keys sorted, no HTML escaping, numbers and strings
// as encoding/json writes them) at a fraction of the allocations.

// responseBody returns the response's body buffer, emptied, for a handler
// to append its answer to and hand back with writeBody: the response owns
// the buffer, pools it and sends it without a copy.
func responseBody(ctx *fasthttp.RequestCtx) []byte { return ctx.Response.SwapBody(nil)[:0] }

// writeBody sends b, got from responseBody and appended to, as the JSON
// body of the response; b is the response's from then on.
func writeBody(ctx *fasthttp.RequestCtx, status int, b []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.Response.SwapBody(b)
}

// rawJSON is an encoded JSON value; writeJSON sends it as is.
type rawJSON []byte

// appendDoc appends a projected record: id, the metadata object, values.
func (s *Server) appendDoc(b []byte, d *engine.Doc) []byte {
	return s.appendDocMeta(b, d, func(b []byte) []byte { return appendMeta(b, d.Version, d.CreatedAt, d.UpdatedAt) })
}

// appendDocMeta appends a projected record as appendDoc does, its
// metadata object written by meta.
func (s *Server) appendDocMeta(b []byte, d *engine.Doc, meta func(b []byte) []byte) []byte {
	keys := make([]string, 0, len(d.Values)+2)
	for k, v := range d.Values {
		if v != nil {
			keys = append(keys, k)
		}
	}
	keys = append(keys, "id", s.meta)
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		switch k {
		case "id":
			b = appendString(b, d.ID)
		case s.meta:
			b = meta(b)
		default:
			b = s.appendValue(b, d.Values[k])
		}
	}
	return append(b, '}')
}

// appendView appends a record read as a view, exactly as appendDoc appends
// the same record projected with every column. The fields come in key
// order (engine.ComparePaths), so objects open and close as the paths go.
func (s *Server) appendView(b []byte, v *engine.RecordView) []byte {
	b = append(b, '{')
	depth := 0   // objects open below the record
	prev := ""   // path of the previous field
	pending := 2 // "id" and the metadata key, in key order, still to write
	fixed := [2]string{"id", s.meta}
	if s.meta < "id" {
		fixed[0], fixed[1] = fixed[1], fixed[0]
	}
	// writeFixed writes the fixed keys that sort before top (all when top
	// is ""), closing any open object first.
	writeFixed := func(top string) {
		for pending > 0 {
			k := fixed[2-pending]
			if top != "" && k > top {
				return
			}
			for ; depth > 0; depth-- {
				b = append(b, '}')
			}
			if b[len(b)-1] != '{' {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			if k == "id" {
				b = appendString(b, v.ID)
			} else {
				b = appendMeta(b, v.Version, v.CreatedAt, v.UpdatedAt)
			}
			prev = k
			pending--
		}
	}
	for i := range v.Fields {
		f := &v.Fields[i]
		path := f.Path()
		// The open objects are the first depth segments of prev: keep those
		// this path shares, close the others.
		shared, common := 0, 0 // segments kept, and their length with dots
		for shared < depth {
			j := strings.IndexByte(path[common:], '.')
			if j < 0 || !strings.HasPrefix(prev[common:], path[common:common+j+1]) {
				break
			}
			common += j + 1
			shared++
		}
		if shared == 0 {
			top := path
			if j := strings.IndexByte(path, '.'); j >= 0 {
				top = path[:j]
			}
			writeFixed(top)
		}
		for ; depth > shared; depth-- {
			b = append(b, '}')
		}
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		// Open the objects of the remaining segments but the last.
		rest := path[common:]
		for {
			j := strings.IndexByte(rest, '.')
			if j < 0 {
				break
			}
			b = appendString(b, rest[:j])
			b = append(b, ':', '{')
			depth++
			rest = rest[j+1:]
		}
		b = appendString(b, rest)
		b = append(b, ':')
		b = s.appendField(b, f)
		prev = path
	}
	writeFixed("")
	for ; depth > 0; depth-- {
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendField appends one value of a view as appendValue appends the value
// engine.Record holds for it.
func (s *Server) appendField(b []byte, f *engine.FieldView) []byte {
	switch f.Type() {
	case engine.TypeString, engine.TypeText, engine.TypeEmail:
		return appendString(b, f.Value.Str)
	case engine.TypeInt:
		return strconv.AppendInt(b, f.Value.Int, 10)
	case engine.TypeFloat:
		return appendFloat(b, f.Value.Float)
	case engine.TypeBool:
		return strconv.AppendBool(b, f.Value.Int != 0)
	case engine.TypeDatetime:
		return appendTime(b, f.Value.Time())
	case engine.TypeLink:
		b = append(b, `{"id":`...)
		b = appendString(b, f.Value.Str)
		return append(b, '}')
	}
	return s.appendValue(b, f.Any())
}

// appendMeta appends the record metadata object.
func appendMeta(b []byte, version uint64, createdAt, updatedAt time.Time) []byte {
	b = append(b, `{"createdAt":`...)
	b = appendTime(b, createdAt)
	b = append(b, `,"updatedAt":`...)
	b = appendTime(b, updatedAt)
	b = append(b, `,"version":`...)
	b = strconv.AppendUint(b, version, 10)
	return append(b, '}')
}

// appendTime appends a timestamp as a JSON string in timeLayout. Every
// record has two, so the four-digit years are written by hand; others go
// through time.Format.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	b = append(b, '"')
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		b = t.AppendFormat(b, timeLayout)
		return append(b, '"')
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	b = append(b,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+month/10), byte('0'+month%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z', '"')
	return b
}

// appendValue appends one projected value (renderValue's rules).
func (s *Server) appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case string:
		return appendString(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return appendFloat(b, x)
	case bool:
		return strconv.AppendBool(b, x)
	case time.Time:
		return appendTime(b, x)
	case engine.JSONText:
		return appendString(b, string(x))
	case engine.Link:
		b = append(b, `{"id":`...)
		b = appendString(b, x.ID)
		return append(b, '}')
	case *engine.Doc:
		return s.appendDoc(b, x)
	case *engine.RevLinkResult:
		return s.appendRevLink(b, x)
	case engine.RevLinkResult:
		return s.appendRevLink(b, &x)
	case []string:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, e)
		}
		return append(b, ']')
	case []float64:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendFloat(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k, e := range x {
			if e != nil {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = s.appendValue(b, x[k])
		}
		return append(b, '}')
	}
	// Anything else (file descriptions) goes through encoding/json.
	enc, err := json.Marshal(s.mustRender(v))
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, enc...)
}

func (s *Server) mustRender(v any) any {
	out, _ := s.renderValue(v)
	return out
}

func (s *Server) appendRevLink(b []byte, r *engine.RevLinkResult) []byte {
	b = append(b, `{"records":[`...)
	first := true
	for _, d := range r.Records {
		if d == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = s.appendDoc(b, d)
	}
	return append(b, "]}"...)
}

// appendFloat formats a float as encoding/json does.
func appendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// Byte-wise constants of plainWord.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// load8 reads the eight bytes of s from i as a little-endian word, which
// the compiler makes one load.
func load8(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// plainWord reports whether none of the eight bytes of x needs an escape
// in a JSON string: each is ASCII, not a control character, quote or
// backslash. It and load8 are kept apart so that both inline into
// appendString's loop, which a call per eight bytes slowed by half.
func plainWord(x uint64) bool {
	// (v-ones)&^v sets the high bit of a byte (the lowest such at least)
	// when a byte of v is zero, and (x-0x20s)&^x when one of x is below
	// 0x20: exact as to whether there is one, which is all this asks.
	// Bytes from 0x80 have it set in x itself.
	q, bs := x^(ones*'"'), x^(ones*'\\')
	bad := x | (x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs
	return bad&highs == 0
}

// appendString appends a JSON string as encoding/json writes it without
// HTML escaping: control characters as \u00XX (or \n, \r, \t), invalid
// UTF-8 as \ufffd, and U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Text is mostly printable ASCII: skip it eight bytes at a time.
		for i+8 <= len(s) && plainWord(load8(s, i)) {
			i += 8
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
