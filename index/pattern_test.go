package index

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestPatternMatch(t *testing.T) {
	f := func(pattern, s string, fold, want bool) {
		t.Helper()
		p, err := CompilePattern(pattern, fold)
		if err != nil {
			t.Fatalf("CompilePattern(%q): %v", pattern, err)
		}
		if got := p.Match(s); got != want {
			t.Errorf("CompilePattern(%q, %v).Match(%q) = %v, want %v", pattern, fold, s, got, want)
		}
	}
	// Literals match the whole string.
	f("", "", false, true)
	f("", "a", false, false)
	f("abc", "abc", false, true)
	f("abc", "abcd", false, false)
	f("abc", "ab", false, false)
	f("abc", "ABC", false, false)
	// * matches any run, the empty one included.
	f("*", "", false, true)
	f("*", "anything", false, true)
	f("a*", "a", false, true)
	f("a*", "abc", false, true)
	f("a*", "ba", false, false)
	f("*c", "abc", false, true)
	f("*c", "abcd", false, false)
	f("a*c", "ac", false, true)
	f("a*c", "abbbc", false, true)
	f("a*c", "abcb", false, false)
	f("a*b*c", "aXbYc", false, true)
	f("a*b*c", "acb", false, false)
	f("**a**", "xax", false, true)
	f("*ab*ab*", "xabyab", false, true)
	f("*ab*ab*", "xaby", false, false)
	f("*aab", "aaab", false, true) // the star must give back a character
	// ? matches exactly one character, a rune rather than a byte.
	f("?", "", false, false)
	f("?", "a", false, true)
	f("?", "ab", false, false)
	f("?", "é", false, true)
	f("??", "é", false, false)
	f("a?c", "abc", false, true)
	f("a?c", "ac", false, false)
	f("*?", "", false, false)
	f("*?", "x", false, true)
	f("?*?", "x", false, false)
	// Escapes make wildcards literal.
	f(`a\*b`, "a*b", false, true)
	f(`a\*b`, "axb", false, false)
	f(`a\?b`, "a?b", false, true)
	f(`a\?b`, "axb", false, false)
	f(`a\\b`, `a\b`, false, true)
	f(`a\\*`, `a\bcd`, false, true)
	f(`\*`, "*", false, true)
	f(`\**`, "*abc", false, true)
	f(`\**`, "abc", false, false)
	// Case-insensitive under simple folding.
	f("abc", "ABC", true, true)
	f("A*z", "abcZ", true, true)
	f("straße", "STRASSE", true, false) // ß folds to no two-letter form
	f("ǅ", "ǆ", true, true)             // title case folds with its orbit
	f("k", "\u212a", true, true)        // Kelvin sign
	f("σ?", "ΣΣ", true, true)
	f("ς", "Σ", true, true)
	f("?", "É", true, true)
	f(`\*`, "*", true, true)
	// Invalid UTF-8 bytes are one character each.
	f("?", "\xff", false, true)
	f("??", "\xff\xfe", false, true)
	f("a*", "a\xff", false, true)
}

func TestPatternCompileErrors(t *testing.T) {
	f := func(pattern, want string) {
		t.Helper()
		_, err := CompilePattern(pattern, false)
		if err == nil || err.Error() != want {
			t.Errorf("CompilePattern(%q) error = %v, want %q", pattern, err, want)
		}
	}
	f(`\`, "trailing backslash")
	f(`abc\`, "trailing backslash")
	f(`\\\`, "trailing backslash")
	f(`\a`, `backslash before 'a' at offset 0: only *, ? and \ can be escaped`)
	f(`ab\n`, `backslash before 'n' at offset 2: only *, ? and \ can be escaped`)
	f(`\é`, `backslash before 'é' at offset 0: only *, ? and \ can be escaped`)
}

func TestPatternLiteralPrefix(t *testing.T) {
	f := func(pattern string, fold bool, prefix string, literal bool) {
		t.Helper()
		p, err := CompilePattern(pattern, fold)
		if err != nil {
			t.Fatalf("CompilePattern(%q): %v", pattern, err)
		}
		if got := p.LiteralPrefix(); got != prefix {
			t.Errorf("%q.LiteralPrefix() = %q, want %q", pattern, got, prefix)
		}
		lit, ok := p.Literal()
		if ok != literal || (ok && lit != prefix) {
			t.Errorf("%q.Literal() = %q, %v", pattern, lit, ok)
		}
		if p.String() != pattern || p.Fold() != fold {
			t.Errorf("%q: String() = %q, Fold() = %v", pattern, p.String(), p.Fold())
		}
	}
	f("", false, "", true)
	f("abc", false, "abc", true)
	f("abc*", false, "abc", false)
	f("ab?c", false, "ab", false)
	f("*abc", false, "", false)
	f(`a\*b*`, false, "a*b", false)
	f(`a\\b\?`, false, `a\b?`, true)
	f("héllo*", false, "héllo", false)
	f("abc*", true, "", false)
	f("abc", true, "", false)
}

// TestPatternLinear checks that a pattern built to make backtracking
// matchers explode is decided quickly.
func TestPatternLinear(t *testing.T) {
	p, err := CompilePattern(strings.Repeat("a*", 50)+"b", false)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Repeat("a", 10000)
	start := time.Now()
	if p.Match(s) {
		t.Fatal("matched")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestFoldHelpers(t *testing.T) {
	f := func(s, sub string, want bool) {
		t.Helper()
		if got := containsFold(s, sub); got != want {
			t.Errorf("containsFold(%q, %q) = %v, want %v", s, sub, got, want)
		}
	}
	f("Hello", "ELL", true)
	f("Hello", "", true)
	f("", "", true)
	f("", "a", false)
	f("ÄÖÜ", "öü", true)
	f("ΣΊΣΥΦΟΣ", "σίσυφος", true)
	f("straße", "SS", false)
	f("K", "\u212a", true)
	f("abc", "abd", false)
}

// referenceMatch is the textbook recursive wildcard matcher over runes:
// exponential in the worst case, so only for short inputs.
func referenceMatch(p []patternToken, s []rune, fold bool) bool {
	if len(p) == 0 {
		return len(s) == 0
	}
	switch p[0].kind {
	case patAny:
		for i := 0; i <= len(s); i++ {
			if referenceMatch(p[1:], s[i:], fold) {
				return true
			}
		}
		return false
	case patOne:
		return len(s) > 0 && referenceMatch(p[1:], s[1:], fold)
	}
	if len(s) == 0 {
		return false
	}
	r := s[0]
	if fold {
		r = foldRune(r)
	}
	return r == p[0].r && referenceMatch(p[1:], s[1:], fold)
}

// referenceTokens parses a pattern independently of CompilePattern.
func referenceTokens(pattern string, fold bool) ([]patternToken, bool) {
	var toks []patternToken
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch r {
		case '*':
			// Runs of stars mean one star; keeping them all would make
			// the recursion below needlessly exponential.
			if n := len(toks); n == 0 || toks[n-1].kind != patAny {
				toks = append(toks, patternToken{kind: patAny})
			}
			continue
		case '?':
			toks = append(toks, patternToken{kind: patOne})
			continue
		case '\\':
			if i+1 == len(rs) || !strings.ContainsRune(`*?\`, rs[i+1]) {
				return nil, false
			}
			i++
			r = rs[i]
		}
		if fold {
			r = foldRune(r)
		}
		toks = append(toks, patternToken{kind: patLiteral, r: r})
	}
	return toks, true
}

// FuzzPattern checks that Match never panics and agrees with the recursive
// reference matcher, and that every match starts with LiteralPrefix.
func FuzzPattern(f *testing.F) {
	for _, seed := range [][2]string{
		{"", ""}, {"*", "abc"}, {"a*b?c", "aXbYc"}, {`a\*b`, "a*b"}, {`\\`, `\`},
		{"*ab*ab*", "xabyab"}, {"?é*", "ééé"}, {"K*", "\u212aelvin"}, {"σ?", "ΣΣ"},
		{`\`, ""}, {`\x`, "x"}, {"*aab", "aaab"}, {"a?*?b", "a\xffxb"},
		{"*a?b*", "xxaxbxx"}, {"*ab?ab?abc*", "abxabxabxabc"}, {"x*??a?a??*y", "xabcaba12y"},
		{"*\ufffd*", "a\xe2\x82b"}, {"*aaab", "aaaaaab"},
	} {
		f.Add(seed[0], seed[1], false)
		f.Add(seed[0], seed[1], true)
	}
	f.Fuzz(func(t *testing.T, pattern, s string, fold bool) {
		p, err := CompilePattern(pattern, fold)
		toks, ok := referenceTokens(pattern, fold)
		if (err == nil) != ok {
			t.Fatalf("CompilePattern(%q) error %v, reference accepts: %v", pattern, err, ok)
		}
		if err != nil {
			return
		}
		got := p.Match(s)
		if len(toks) <= 10 && utf8.RuneCountInString(s) <= 16 {
			if want := referenceMatch(toks, []rune(s), fold); got != want {
				t.Fatalf("CompilePattern(%q, %v).Match(%q) = %v, reference %v", pattern, fold, s, got, want)
			}
		}
		if len(toks)*len(s) <= 1<<20 {
			if want := tableMatch(toks, []rune(s), fold); got != want {
				t.Fatalf("CompilePattern(%q, %v).Match(%q) = %v, table %v", pattern, fold, s, got, want)
			}
		}
		if got && !strings.HasPrefix(s, p.LiteralPrefix()) {
			// A literal prefix of valid UTF-8 must be a byte prefix too.
			if utf8.ValidString(s) {
				t.Fatalf("%q matches %q but does not start with %q", pattern, s, p.LiteralPrefix())
			}
		}
		if lit, ok := p.Literal(); ok && utf8.ValidString(s) && got != (s == lit) {
			t.Fatalf("literal pattern %q: Match(%q) = %v", pattern, s, got)
		}
	})
}

// tableMatch is the dynamic-programming wildcard matcher over runes:
// reach[j] says whether the first j tokens match the runes read so far.
// It takes O(runes × tokens), fine for the moderate inputs it checks.
func tableMatch(p []patternToken, s []rune, fold bool) bool {
	reach := make([]bool, len(p)+1)
	reach[0] = true
	for j := 1; j <= len(p) && p[j-1].kind == patAny; j++ {
		reach[j] = true
	}
	next := make([]bool, len(p)+1)
	for _, r := range s {
		if fold {
			r = foldRune(r)
		}
		next[0] = false
		for j := 1; j <= len(p); j++ {
			switch t := p[j-1]; t.kind {
			case patAny:
				next[j] = reach[j] || next[j-1]
			case patOne:
				next[j] = reach[j-1]
			default:
				next[j] = reach[j-1] && t.r == r
			}
		}
		reach, next = next, reach
	}
	return reach[len(p)]
}

// starMatch is the matcher this package used before: after a mismatch it
// lets the most recent star swallow one more rune and retries, which takes
// O(runes × tokens) at worst.
func starMatch(toks []patternToken, s string, fold bool) bool {
	ti, si := 0, 0
	starT, starS := -1, 0
	for si < len(s) {
		r, w := utf8.DecodeRuneInString(s[si:])
		if fold {
			r = foldRune(r)
		}
		if ti < len(toks) {
			switch t := toks[ti]; t.kind {
			case patAny:
				ti++
				starT, starS = ti, si
				continue
			case patOne:
				ti++
				si += w
				continue
			default:
				if t.r == r {
					ti++
					si += w
					continue
				}
			}
		}
		if starT < 0 {
			return false
		}
		_, sw := utf8.DecodeRuneInString(s[starS:])
		starS += sw
		ti, si = starT, starS
	}
	for ti < len(toks) && toks[ti].kind == patAny {
		ti++
	}
	return ti == len(toks)
}

// TestPatternDifferential compares Match with the table matcher and the
// star-retry matcher on seeded random patterns and values over a small
// alphabet, so that segments recur, overlap and sit next to each other.
// Long segments with `?` exercise the multi-word automaton.
func TestPatternDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 1))
	alphabet := []string{"a", "b", "A", "é", "É", "k", "\u212a", "\xff", "\xe2\x82"}
	pat := []string{"a", "b", "A", "é", "k", "*", "?", "?", `\*`, "a", "b"}
	n := 20000
	if testing.Short() {
		n = 4000
	}
	for i := range n {
		var pb, sb strings.Builder
		plen := rng.IntN(12)
		if i%50 == 0 {
			plen = 64 + rng.IntN(140) // more than one state word
		}
		for range plen {
			pb.WriteString(pat[rng.IntN(len(pat))])
		}
		slen := rng.IntN(40)
		if i%50 == 0 {
			slen = 200 + rng.IntN(400)
		}
		for range slen {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		pattern, s, fold := pb.String(), sb.String(), rng.IntN(2) == 0
		p, err := CompilePattern(pattern, fold)
		if err != nil {
			t.Fatalf("CompilePattern(%q): %v", pattern, err)
		}
		got := p.Match(s)
		if want := tableMatch(p.toks, []rune(s), fold); got != want {
			t.Fatalf("CompilePattern(%q, %v).Match(%q) = %v, table %v", pattern, fold, s, got, want)
		}
		if want := starMatch(p.toks, s, fold); got != want {
			t.Fatalf("CompilePattern(%q, %v).Match(%q) = %v, star-retry %v", pattern, fold, s, got, want)
		}
	}
}

// TestPatternCancel checks that a long bit-parallel search stops when its
// context ends.
func TestPatternCancel(t *testing.T) {
	p, err := CompilePattern("*"+strings.Repeat("a?", 2000)+"b*", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok, err := p.MatchContext(ctx, strings.Repeat("a", 1<<20))
	if ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("MatchContext on an ended context = %v, %v", ok, err)
	}
}
