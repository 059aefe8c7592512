package api

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
)

// TestAppendDocMatchesEncodingJSON: the hand-written record encoder writes
// exactly what encoding/json writes for the same rendered record.
func TestAppendDocMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	randomValue := randomValues(rng)
	s := &Server{meta: "svc"}
	for i := 0; i < 2000; i++ {
		d := randomDoc(rng, randomValue, 0)
		want := encodingJSON(t, s.renderDoc(d))
		if got := s.appendDoc(nil, d); !bytes.Equal(got, want) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// TestSearchResponseMatchesEncodingJSON: a search's answer is written as
// encoding/json writes its records rendered as maps, with score, table and
// highlight in their metadata.
func TestSearchResponseMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	randomValue := randomValues(rng)
	s := &Server{meta: "svc"}
	for i := 0; i < 500; i++ {
		res := &engine.SearchResult{TotalCount: rng.Intn(20000)}
		if rng.Intn(3) == 0 {
			res.Warning = "some <words> \"match\""
		}
		for j := rng.Intn(4); j > 0; j-- {
			h := &engine.SearchHit{Doc: randomDoc(rng, randomValue, 0), Table: "t\u00e9", Score: rng.NormFloat64() * 10}
			switch rng.Intn(3) {
			case 0:
				h.Highlight = map[string]any{}
			case 1:
				h.Highlight = map[string]any{"body": []string{"a <em>b</em> &amp;"}, "obj": map[string]any{"x": []string{"<em>é</em>", "y"}}}
			}
			res.Records = append(res.Records, h)
		}
		recs := []any{}
		for _, h := range res.Records {
			doc := s.renderDoc(h.Doc)
			meta := doc[s.meta].(map[string]any)
			meta["score"], meta["table"] = h.Score, h.Table
			if h.Highlight != nil {
				meta["highlight"] = h.Highlight
			}
			recs = append(recs, doc)
		}
		out := map[string]any{"records": recs, "totalCount": res.TotalCount}
		if res.Warning != "" {
			out["warning"] = res.Warning
		}
		want := encodingJSON(t, out)
		ctx := &fasthttp.RequestCtx{}
		s.writeSearch(&request{ctx: ctx}, res)
		if got := ctx.Response.Body(); !bytes.Equal(got, want) {
			t.Fatalf("answer %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// encodingJSON is v as encoding/json writes it, without escaping HTML.
func encodingJSON(t *testing.T, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// randomValues returns a maker of random record values of every kind the
// record encoder knows, nested up to a depth.
func randomValues(rng *rand.Rand) func(depth int) any {
	strs := []string{"", "plain", "quote\"back\\slash", "ctl\x00\x01\x1f\n\r\t", "<&>", "é ☃ 𝄞", "bad\xffutf8", "line\u2028sep\u2029", "\x7f"}
	floats := []float64{0, -0.0, 1, -1.5, 1e-7, 123456789e15, 1e21, 1e-6, 0.1, math.MaxFloat64, math.SmallestNonzeroFloat64, 3.14159}
	var randomValue func(depth int) any
	randomValue = func(depth int) any {
		switch rng.Intn(10) {
		case 0:
			return strs[rng.Intn(len(strs))]
		case 1:
			return int64(rng.Int63() - rng.Int63())
		case 2:
			return floats[rng.Intn(len(floats))]
		case 3:
			return rng.Intn(2) == 0
		case 4:
			return time.Unix(rng.Int63n(1<<34), rng.Int63n(1e9)).UTC()
		case 5:
			return []string{strs[rng.Intn(len(strs))], "x"}
		case 6:
			return []float64{floats[rng.Intn(len(floats))]}
		case 7:
			return engine.Link{ID: "rec_" + strs[rng.Intn(len(strs))]}
		case 8:
			return engine.JSONText(`{"a":1}`)
		}
		if depth > 2 {
			return "leaf"
		}
		if rng.Intn(2) == 0 {
			return map[string]any{strs[rng.Intn(len(strs))]: randomValue(depth + 1), "n": nil}
		}
		return &engine.RevLinkResult{Records: []*engine.Doc{randomDoc(rng, randomValue, depth+1)}}
	}
	return randomValue
}

func randomDoc(rng *rand.Rand, value func(int) any, depth int) *engine.Doc {
	d := &engine.Doc{ID: "rec_1", Version: uint64(rng.Intn(9)), CreatedAt: time.Unix(1e9, 123e6), UpdatedAt: time.Unix(2e9, 0), Values: map[string]any{}}
	for j := rng.Intn(5); j > 0; j-- {
		d.Values[string(rune('a'+rng.Intn(26)))] = value(depth)
	}
	return d
}

// TestPlainWord: the eight-byte test agrees with the byte-wise rule for every
// byte at every position, and for random words of mixed bytes.
func TestPlainWord(t *testing.T) {
	plain := func(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' }
	naive := func(s string) bool {
		for i := 0; i < 8; i++ {
			if !plain(s[i]) {
				return false
			}
		}
		return true
	}
	for c := 0; c < 256; c++ {
		for at := 0; at < 8; at++ {
			w := []byte("abcdefgh")
			w[at] = byte(c)
			if got, want := plainWord(load8(string(w), 0)), naive(string(w)); got != want {
				t.Fatalf("plainWord(%q) = %v, want %v", w, got, want)
			}
		}
	}
	rng := rand.New(rand.NewSource(1))
	pick := []byte{0, 0x1f, 0x20, 0x21, '"', '#', '[', '\\', ']', 0x7f, 0x80, 0xff, 'a'}
	for range 200000 {
		var w [9]byte
		for i := range w {
			w[i] = pick[rng.Intn(len(pick))]
		}
		if got, want := plainWord(load8(string(w[:]), 1)), naive(string(w[1:])); got != want {
			t.Fatalf("plainWord(%q) = %v, want %v", w[1:], got, want)
		}
	}
}

// FuzzAppendString: appendString writes what a byte-at-a-time encoder
// writes, which is what encoding/json writes without HTML escaping except
// for \b and \f, which records have always shown as \u0008 and \u000c.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain words of a body", "quote\"back\\slash", "ctl\x00\x01\x1f\n\r\t\b\f", "<&>", "é ☃ 𝄞 and more text", "bad\xffutf8 in a longer string", "line\u2028sep\u2029", "\x7f\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := appendStringBytewise(nil, s)
		if got := appendString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("appendString(%q) = %s, want %s", s, got[1:], want)
		}
		if strings.ContainsAny(s, "\b\f") {
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if std := bytes.TrimSuffix(buf.Bytes(), []byte("\n")); !bytes.Equal(want, std) {
			t.Fatalf("%q: byte-wise %s, encoding/json %s", s, want, std)
		}
	})
}

// appendStringBytewise is the model of appendString: every byte looked at
// on its own.
func appendStringBytewise(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
