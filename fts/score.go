package fts

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// BM25 parameters: K1 saturates term frequency, B sets how much a long field
// is penalised against the column's average length.
const (
	K1 = 1.2
	B  = 0.75
)

// IDF is the rarity of a term in a column: ln(1 + (N − n + 0.5)/(n + 0.5))
// for N records of which n contain the term. It is positive for every
// 0 <= n <= N, so a term found in every record still adds a little.
func IDF(docs, docsWithTerm int) float64 {
	N, nt := float64(docs), float64(docsWithTerm)
	return math.Log(1 + (N-nt+0.5)/(nt+0.5))
}

// TermBM25 is one term's BM25 contribution to a field:
// idf · tf·(K1+1) / (tf + K1·(1 − B + B·fieldLen/avgLen)). fieldLen and
// avgLen are counted in tokens; with avgLen <= 0 (nothing indexed yet) the
// field counts as of average length.
func TermBM25(idf float64, tf, fieldLen int, avgLen float64) float64 {
	if tf <= 0 {
		return 0
	}
	norm := 1.0
	if avgLen > 0 {
		norm = 1 - B + B*float64(fieldLen)/avgLen
	}
	f := float64(tf)
	return idf * f * (K1 + 1) / (f + K1*norm)
}

// MatchFactor weighs a term found for a query word by how it was found, so
// that a typo or a completion ranks below the word as typed: 1 for an exact
// match, 1/(1+d) for a match at edit distance d (½ for one typo, ⅓ for two),
// and ½ for a prefix completion (the query's last word "new" finding
// "newark"), the same as one typo.
func MatchFactor(dist int, completion bool) float64 {
	f := 1 / float64(1+max(dist, 0))
	if completion {
		f = min(f, 0.5)
	}
	return f
}

// Hit is one index term found in one field of a record.
type Hit struct {
	// Word identifies the query word the term was found for (its index
	// in the query's terms).
	Word int
	// TF is how often the term occurs in the field; DocFreq how many
	// records of the column contain it (n_t).
	TF, DocFreq int
	// Dist is the term's edit distance from the query word; Completion
	// that the term was found as a prefix completion of it.
	Dist       int
	Completion bool
}

// ColumnStats are the per-column figures BM25 normalises by.
type ColumnStats struct {
	// Docs is the number of records (N) and AvgLen their average field
	// length in tokens.
	Docs   int
	AvgLen float64
}

// ColumnScore is a field's BM25 score times the column's target weight:
// weight · Σ over query words of the best TermBM25 · MatchFactor among the
// hits found for that word. Taking the best hit per word, not the sum, keeps
// a word whose typo variants all occur in a field ("color" and "colour")
// from counting twice; different words still add up, so a record matching
// more of the query scores higher.
func ColumnScore(st ColumnStats, fieldLen int, weight float64, hits []Hit) float64 {
	type best struct {
		word  int
		score float64
	}
	var words []best // few: one per query word
	for _, h := range hits {
		s := TermBM25(IDF(st.Docs, h.DocFreq), h.TF, fieldLen, st.AvgLen) * MatchFactor(h.Dist, h.Completion)
		i := 0
		for i < len(words) && words[i].word != h.Word {
			i++
		}
		if i == len(words) {
			words = append(words, best{word: h.Word, score: s})
		} else {
			words[i].score = max(words[i].score, s)
		}
	}
	sum := 0.0
	for _, w := range words {
		sum += w.score
	}
	return weight * sum
}

// Boosters add to a record's text score after BM25 and target weights. Each
// takes applies, the caller's verdict on the booster's ifMatchesFilter
// (true when there is none); a booster that does not apply adds 0.

// ValueBoost is a valueBooster: factor when the column equals the booster's
// value (for a multiple column, when it contains it).
func ValueBoost(factor float64, equal, applies bool) float64 {
	if !applies || !equal {
		return 0
	}
	return finite(factor)
}

// Modifier is a numericBooster's function of factor · value.
type Modifier uint8

// The modifiers, named as on the wire.
const (
	ModNone       Modifier = iota // x
	ModLog                        // log10(x)
	ModLog1p                      // log10(1 + x)
	ModLn                         // ln(x)
	ModLn1p                       // ln(1 + x)
	ModSquare                     // x²
	ModSqrt                       // √x
	ModReciprocal                 // 1/x
)

var modifierNames = [...]string{"none", "log", "log1p", "ln", "ln1p", "square", "sqrt", "reciprocal"}

func (m Modifier) String() string {
	if int(m) < len(modifierNames) {
		return modifierNames[m]
	}
	return "Modifier(" + strconv.Itoa(int(m)) + ")"
}

// ParseModifier reads a modifier's wire name; "" is none.
func ParseModifier(s string) (Modifier, error) {
	if s == "" {
		return ModNone, nil
	}
	for i, n := range modifierNames {
		if n == s {
			return Modifier(i), nil
		}
	}
	return 0, fmt.Errorf("unknown numericBooster modifier %q: want one of none, log, log1p, ln, ln1p, square, sqrt, reciprocal", s)
}

// Apply computes the modifier of x.
func (m Modifier) Apply(x float64) float64 {
	switch m {
	case ModLog:
		return math.Log10(x)
	case ModLog1p:
		return math.Log10(1 + x)
	case ModLn:
		return math.Log(x)
	case ModLn1p:
		return math.Log1p(x)
	case ModSquare:
		return x * x
	case ModSqrt:
		return math.Sqrt(x)
	case ModReciprocal:
		return 1 / x
	}
	return x
}

// NumericBoost is a numericBooster: mod(factor · value). ok is false when
// the record's value is null, which adds nothing; so does a result that is
// not a finite number (the log of 0, the square root of a negative).
func NumericBoost(factor float64, mod Modifier, value float64, ok, applies bool) float64 {
	if !ok || !applies {
		return 0
	}
	return finite(mod.Apply(factor * value))
}

// DateDecay is a parsed dateBooster: factor · decay^(|date − origin| / scale).
// Its boost is factor at the origin, factor · decay at one scale away, and
// falls towards 0 beyond.
type DateDecay struct {
	Origin time.Time
	Scale  time.Duration
	Decay  float64
	Factor float64
}

// NewDateDecay checks and parses a dateBooster's fields. origin is RFC 3339
// or "" for now; scale matches ^(\d+)(d|h|m|s|ms)$ and is not zero; decay
// lies in [0, 1]; factor is nil for the default 1, or at least 0.
func NewDateDecay(origin, scale string, decay float64, factor *float64, now time.Time) (DateDecay, error) {
	b := DateDecay{Origin: now, Decay: decay, Factor: 1}
	if origin != "" {
		t, err := time.Parse(time.RFC3339Nano, origin)
		if err != nil {
			return DateDecay{}, fmt.Errorf("dateBooster origin %q is not an RFC 3339 date", origin)
		}
		b.Origin = t
	}
	s, err := ParseScale(scale)
	if err != nil {
		return DateDecay{}, err
	}
	b.Scale = s
	if !(decay >= 0 && decay <= 1) {
		return DateDecay{}, fmt.Errorf("dateBooster decay %v must lie between 0 and 1", decay)
	}
	if factor != nil {
		if !(*factor >= 0) || math.IsInf(*factor, 0) {
			return DateDecay{}, fmt.Errorf("dateBooster factor %v must be a number of at least 0", *factor)
		}
		b.Factor = *factor
	}
	return b, nil
}

// ParseScale reads a dateBooster scale: a positive whole number and one of
// the units d (24 hours), h, m, s, ms.
func ParseScale(s string) (time.Duration, error) {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	unit, ok := scaleUnits[s[i:]]
	if i == 0 || !ok {
		return 0, fmt.Errorf("dateBooster scale %q must match ^(\\d+)(d|h|m|s|ms)$", s)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n > math.MaxInt64/int64(unit) {
		return 0, fmt.Errorf("dateBooster scale %q is too large", s)
	}
	if n == 0 {
		return 0, errors.New("dateBooster scale must not be zero")
	}
	return time.Duration(n) * unit, nil
}

var scaleUnits = map[string]time.Duration{
	"d": 24 * time.Hour, "h": time.Hour, "m": time.Minute, "s": time.Second, "ms": time.Millisecond,
}

// Boost is the booster's addition for a record whose date is t; ok is false
// when the record has no date, which adds nothing.
func (b DateDecay) Boost(t time.Time, ok, applies bool) float64 {
	if !ok || !applies || b.Scale <= 0 {
		return 0
	}
	// Seconds as floats: a Duration overflows beyond 292 years.
	dist := math.Abs(float64(t.Unix()-b.Origin.Unix()) + float64(t.Nanosecond()-b.Origin.Nanosecond())/1e9)
	return finite(b.Factor * math.Pow(b.Decay, dist/b.Scale.Seconds()))
}

// finite returns x, or 0 when x is NaN or infinite: a boost that is not a
// number must not poison the ranking.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
