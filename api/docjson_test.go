package api

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// TestAppendDocMatchesEncodingJSON: the hand-written record encoder writes
// exactly what encoding/json writes for the same rendered record.
func TestAppendDocMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
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
	s := &Server{meta: "svc"}
	for i := 0; i < 2000; i++ {
		d := randomDoc(rng, randomValue, 0)
		want, err := json.Marshal(s.renderDoc(d))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(s.renderDoc(d))
		want = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := s.appendDoc(nil, d); !bytes.Equal(got, want) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func randomDoc(rng *rand.Rand, value func(int) any, depth int) *engine.Doc {
	d := &engine.Doc{ID: "rec_1", Version: uint64(rng.Intn(9)), CreatedAt: time.Unix(1e9, 123e6), UpdatedAt: time.Unix(2e9, 0), Values: map[string]any{}}
	for j := rng.Intn(5); j > 0; j-- {
		d.Values[string(rune('a'+rng.Intn(26)))] = value(depth)
	}
	return d
}
