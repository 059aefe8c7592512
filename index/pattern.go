package index

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pattern is a compiled $pattern or $iPattern: a whole-string match where
// `*` matches any run of characters (possibly empty), `?` exactly one
// character (one rune) and a backslash escapes `*`, `?` or itself. A Pattern
// is immutable and safe for concurrent use.
//
// Matching never backtracks. The pattern is split at its stars into
// segments of literals and `?`. The first segment must match at the start
// of the value and the last one at its end; each segment in between is
// found at its leftmost place after the one before it, which is where any
// match could put it. Finding a segment reads the value once: a segment of
// literals with a Knuth-Morris-Pratt automaton, one with a `?` between
// literals with a bit-parallel (shift-and) automaton. A match therefore
// takes O(n + m) steps for a value of n runes and a pattern of m, or
// O(n × ⌈k/64⌉) when a segment of k runes has a `?` between two literals.
type Pattern struct {
	src  string
	fold bool
	// toks is the pattern with escapes resolved and runs of `*` collapsed.
	// Literal runes of a case-insensitive pattern are stored folded.
	toks []patternToken
	// segs are toks split at the stars: one more than there are stars.
	segs []*segment
}

// patternToken is a literal rune, or one of the wildcards.
type patternToken struct {
	kind patternKind
	r    rune
}

// patternKind says what a pattern token matches.
type patternKind uint8

// Pattern token kinds.
const (
	patLiteral patternKind = iota
	patOne                 // ?
	patAny                 // *
)

// CompilePattern compiles the wildcard pattern src. With fold set, literal
// characters match case-insensitively under Unicode simple case folding (the
// folding of strings.EqualFold). A backslash before anything other than `*`,
// `?` or `\`, or at the end, is an error.
func CompilePattern(src string, fold bool) (*Pattern, error) {
	p := &Pattern{src: src, fold: fold}
	for i := 0; i < len(src); {
		r, w := utf8.DecodeRuneInString(src[i:])
		switch r {
		case '*':
			if n := len(p.toks); n == 0 || p.toks[n-1].kind != patAny {
				p.toks = append(p.toks, patternToken{kind: patAny})
			}
		case '?':
			p.toks = append(p.toks, patternToken{kind: patOne})
		case '\\':
			if i+w >= len(src) {
				return nil, fmt.Errorf("trailing backslash")
			}
			e, ew := utf8.DecodeRuneInString(src[i+w:])
			if e != '*' && e != '?' && e != '\\' {
				return nil, fmt.Errorf("backslash before %q at offset %d: only *, ? and \\ can be escaped", e, i)
			}
			p.toks = append(p.toks, patternToken{kind: patLiteral, r: p.foldRune(e)})
			w += ew
		default:
			p.toks = append(p.toks, patternToken{kind: patLiteral, r: p.foldRune(r)})
		}
		i += w
	}
	start := 0
	for i, t := range p.toks {
		if t.kind == patAny {
			p.segs = append(p.segs, newSegment(p.toks[start:i]))
			start = i + 1
		}
	}
	p.segs = append(p.segs, newSegment(p.toks[start:]))
	return p, nil
}

// String returns the pattern as it was written.
func (p *Pattern) String() string { return p.src }

// Fold reports whether the pattern matches case-insensitively.
func (p *Pattern) Fold() bool { return p.fold }

// Match reports whether the whole of s matches the pattern.
func (p *Pattern) Match(s string) bool {
	ok, _ := p.MatchContext(context.Background(), s)
	return ok
}

// MatchContext is Match that gives up with ctx's error once ctx ends. Only
// the bit-parallel search, the one part whose time grows with the pattern
// as well as the value, looks at ctx.
func (p *Pattern) MatchContext(ctx context.Context, s string) (bool, error) {
	last := len(p.segs) - 1
	if last == 0 {
		end, ok := p.segs[0].matchAt(s, 0, p.fold)
		return ok && end == len(s), nil
	}
	pos, ok := p.segs[0].matchAt(s, 0, p.fold)
	if !ok {
		return false, nil
	}
	tail, ok := p.segs[last].matchEnd(s, pos, p.fold)
	if !ok {
		return false, nil
	}
	s = s[:tail]
	for _, sg := range p.segs[1:last] {
		var err error
		if pos, ok, err = sg.find(ctx, s, pos, p.fold); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// segment is a run of pattern tokens between two stars (or an end of the
// pattern): literals and `?`. For the search, it is lead `?`, then core,
// then trail `?`, where core starts and ends with a literal.
type segment struct {
	toks        []patternToken
	lead, trail int
	core        []patternToken
	// fail is the KMP failure function of a core without `?`: fail[i] is
	// the length of the longest proper prefix of core[:i+1] that is also
	// its suffix.
	fail []int32
	// shift is the automaton of a core with a `?`.
	shift *shiftAnd
}

// newSegment prepares the search for a segment.
func newSegment(toks []patternToken) *segment {
	sg := &segment{toks: toks}
	for sg.lead < len(toks) && toks[sg.lead].kind == patOne {
		sg.lead++
	}
	for sg.trail < len(toks)-sg.lead && toks[len(toks)-1-sg.trail].kind == patOne {
		sg.trail++
	}
	sg.core = toks[sg.lead : len(toks)-sg.trail]
	if len(sg.core) == 0 {
		return sg
	}
	for _, t := range sg.core {
		if t.kind == patOne {
			sg.shift = newShiftAnd(sg.core)
			return sg
		}
	}
	sg.fail = make([]int32, len(sg.core))
	k := int32(0)
	for i := 1; i < len(sg.core); i++ {
		for k > 0 && sg.core[i].r != sg.core[k].r {
			k = sg.fail[k-1]
		}
		if sg.core[i].r == sg.core[k].r {
			k++
		}
		sg.fail[i] = k
	}
	return sg
}

// matchAt matches the segment at byte offset i of s and returns the offset
// after it.
func (sg *segment) matchAt(s string, i int, fold bool) (int, bool) {
	for _, t := range sg.toks {
		if i >= len(s) {
			return 0, false
		}
		r, w := decodeRune(s[i:], fold)
		if t.kind == patLiteral && t.r != r {
			return 0, false
		}
		i += w
	}
	return i, true
}

// matchEnd matches the segment at the end of s, starting at byte offset lo
// or later, and returns the offset where it starts. Reading UTF-8 backwards
// splits s into the same runes as reading it forwards, invalid bytes
// included.
func (sg *segment) matchEnd(s string, lo int, fold bool) (int, bool) {
	j := len(s)
	for k := len(sg.toks) - 1; k >= 0; k-- {
		if j <= lo {
			return 0, false
		}
		r, w := utf8.DecodeLastRuneInString(s[lo:j])
		if fold {
			r = foldRune(r)
		}
		if t := sg.toks[k]; t.kind == patLiteral && t.r != r {
			return 0, false
		}
		j -= w
	}
	return j, true
}

// find returns the offset after the leftmost occurrence of the segment in
// s at or after byte offset i.
func (sg *segment) find(ctx context.Context, s string, i int, fold bool) (int, bool, error) {
	i, ok := skipRunes(s, i, sg.lead)
	if !ok {
		return 0, false, nil
	}
	switch {
	case sg.shift != nil:
		var err error
		if i, ok, err = sg.shift.find(ctx, s, i, fold); !ok || err != nil {
			return 0, false, err
		}
	case len(sg.core) > 0:
		if i, ok = sg.findLiteral(s, i, fold); !ok {
			return 0, false, nil
		}
	}
	i, ok = skipRunes(s, i, sg.trail)
	return i, ok, nil
}

// findLiteral runs the KMP automaton of the core over s from byte offset
// i and returns the offset after the first occurrence. Each rune of s is
// read once; the automaton's steps back are paid for by its steps
// forward, so the search is linear in the runes read.
func (sg *segment) findLiteral(s string, i int, fold bool) (int, bool) {
	core, k := sg.core, int32(0)
	for i < len(s) {
		r, w := decodeRune(s[i:], fold)
		i += w
		for k > 0 && core[k].r != r {
			k = sg.fail[k-1]
		}
		if core[k].r == r {
			k++
			if int(k) == len(core) {
				return i, true
			}
		}
	}
	return 0, false
}

// shiftAnd is the bit-parallel automaton of a core with `?`: after each
// rune of the value, bit j of the state says whether the core's first j+1
// tokens match the runes that end there.
type shiftAnd struct {
	n     int      // tokens
	words int      // state words
	any   []uint64 // positions of `?`
	// Each rune of the core has its positions either as a bitmask that
	// includes any (a rune at many positions) or as a list (at few). Few
	// runes can be at many positions, so the masks take O(n) space in all.
	masks [][]uint64
	lists [][]int32
	ascii [128]int32     // rune → index+1 into masks or lists, negative for lists
	other map[rune]int32 // the same for the other runes
}

// newShiftAnd builds the automaton of core.
func newShiftAnd(core []patternToken) *shiftAnd {
	a := &shiftAnd{n: len(core), words: (len(core) + 63) / 64}
	a.any = make([]uint64, a.words)
	pos := map[rune][]int32{}
	var order []rune
	for j, t := range core {
		if t.kind == patOne {
			a.any[j/64] |= 1 << (j % 64)
			continue
		}
		if _, seen := pos[t.r]; !seen {
			order = append(order, t.r)
		}
		pos[t.r] = append(pos[t.r], int32(j))
	}
	for _, r := range order {
		var ref int32
		if ps := pos[r]; len(ps) >= a.words {
			m := append([]uint64(nil), a.any...)
			for _, j := range ps {
				m[j/64] |= 1 << (j % 64)
			}
			a.masks = append(a.masks, m)
			ref = int32(len(a.masks))
		} else {
			a.lists = append(a.lists, ps)
			ref = -int32(len(a.lists))
		}
		if r >= 0 && r < 128 {
			a.ascii[r] = ref
		} else {
			if a.other == nil {
				a.other = map[rune]int32{}
			}
			a.other[r] = ref
		}
	}
	return a
}

// shiftAndCheckWork is how many state words the search updates between two
// looks at its context.
const shiftAndCheckWork = 1 << 16

// find runs the automaton over s from byte offset i and returns the offset
// after the first occurrence of the core.
func (a *shiftAnd) find(ctx context.Context, s string, i int, fold bool) (int, bool, error) {
	state := make([]uint64, a.words)
	shifted := make([]uint64, a.words)
	lastWord, lastBit := (a.n-1)/64, uint64(1)<<((a.n-1)%64)
	checkEvery := max(1, shiftAndCheckWork/a.words)
	for step := 1; i < len(s); step++ {
		if step%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return 0, false, err
			}
		}
		r, w := decodeRune(s[i:], fold)
		i += w
		// shifted = state << 1 | 1: the partial matches extended by one
		// rune, and a new one starting here.
		carry := uint64(1)
		for k, x := range state {
			shifted[k] = x<<1 | carry
			carry = x >> 63
		}
		var ref int32
		if r >= 0 && r < 128 {
			ref = a.ascii[r]
		} else {
			ref = a.other[r]
		}
		switch {
		case ref > 0:
			for k, m := range a.masks[ref-1] {
				state[k] = shifted[k] & m
			}
		default:
			for k, m := range a.any {
				state[k] = shifted[k] & m
			}
			if ref < 0 {
				for _, j := range a.lists[-ref-1] {
					state[j/64] |= shifted[j/64] & (1 << (j % 64))
				}
			}
		}
		if state[lastWord]&lastBit != 0 {
			return i, true, nil
		}
	}
	return 0, false, nil
}

// skipRunes advances byte offset i of s by n runes.
func skipRunes(s string, i, n int) (int, bool) {
	for ; n > 0; n-- {
		if i >= len(s) {
			return 0, false
		}
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return i, true
}

// decodeRune decodes the first rune of s, folded when fold is set.
func decodeRune(s string, fold bool) (rune, int) {
	r, w := rune(s[0]), 1
	if r >= utf8.RuneSelf {
		r, w = utf8.DecodeRuneInString(s)
	}
	if fold {
		r = foldRune(r)
	}
	return r, w
}

// LiteralPrefix returns the characters every match starts with: the
// literal part of the pattern before its first wildcard, escapes resolved.
// The strings matching a case-sensitive pattern are a subset of those
// starting with it, so it bounds an index range scan. A case-insensitive
// pattern has no such byte prefix and returns "".
func (p *Pattern) LiteralPrefix() string {
	if p.fold {
		return ""
	}
	var b strings.Builder
	for _, t := range p.toks {
		if t.kind != patLiteral {
			break
		}
		b.WriteRune(t.r)
	}
	return b.String()
}

// Literal returns the string the pattern matches and true when it has no
// wildcard and is case-sensitive, so it is an equality.
func (p *Pattern) Literal() (string, bool) {
	if p.fold {
		return "", false
	}
	for _, t := range p.toks {
		if t.kind != patLiteral {
			return "", false
		}
	}
	return p.LiteralPrefix(), true
}

// foldRune folds r when the pattern is case-insensitive.
func (p *Pattern) foldRune(r rune) rune {
	if !p.fold {
		return r
	}
	return foldRune(r)
}

// foldRune maps r to the smallest rune of its simple case folding orbit,
// so that two runes are equal under strings.EqualFold exactly when their
// foldRune values are equal. The orbit of an ASCII letter holds its upper
// case, its lower case and runes above ASCII (K, k and the Kelvin sign), so
// its smallest rune is the upper case.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - ('a' - 'A')
		}
		return r
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}

// foldString applies foldRune to each rune of s. Invalid UTF-8 bytes become
// U+FFFD, which no valid input confuses with anything but itself.
func foldString(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// containsFold reports whether sub occurs in s under simple case folding.
func containsFold(s, sub string) bool {
	return strings.Contains(foldString(s), foldString(sub))
}
