package index

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pattern is a compiled $pattern or $iPattern: a whole-string match where
// `*` matches any run of characters (possibly empty), `?` exactly one
// character (one rune) and a backslash escapes `*`, `?` or itself. A Pattern
// is immutable and safe for concurrent use.
type Pattern struct {
	src  string
	fold bool
	// toks is the pattern with escapes resolved and runs of `*` collapsed.
	// Literal runes of a case-insensitive pattern are stored folded.
	toks []patternToken
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
	return p, nil
}

// String returns the pattern as it was written.
func (p *Pattern) String() string { return p.src }

// Fold reports whether the pattern matches case-insensitively.
func (p *Pattern) Fold() bool { return p.fold }

// Match reports whether the whole of s matches the pattern. It runs in
// O(len(s) × len(pattern)) at worst: after a mismatch it only moves the
// most recent `*` one character on, never revisits earlier stars.
func (p *Pattern) Match(s string) bool {
	toks := p.toks
	ti, si := 0, 0
	starT, starS := -1, 0 // token after the last `*`, and where its run ends in s
	for si < len(s) {
		r, w := utf8.DecodeRuneInString(s[si:])
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
				if t.r == p.foldRune(r) {
					ti++
					si += w
					continue
				}
			}
		}
		if starT < 0 {
			return false
		}
		// Let the last star swallow one more character and retry after it.
		_, sw := utf8.DecodeRuneInString(s[starS:])
		starS += sw
		ti, si = starT, starS
	}
	for ti < len(toks) && toks[ti].kind == patAny {
		ti++
	}
	return ti == len(toks)
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
// foldRune values are equal.
func foldRune(r rune) rune {
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
