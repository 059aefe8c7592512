package fts

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxTokenBytes bounds the source length of a token. Longer runs of letters
// and digits (encoded blobs, hashes glued together) are not indexed: they are
// never searched for, and they would only bloat the dictionary. They still
// take a position, so phrase adjacency does not bridge them.
const MaxTokenBytes = 256

// Token is one word of a text: its folded term and where it came from.
type Token struct {
	// Term is the folded form that is indexed and looked up. It may share
	// memory with the analysed text.
	Term string
	// Start and End are byte offsets into the analysed text: text[Start:End]
	// is the word as written, and Fold(text[Start:End]) == Term.
	Start, End int
	// Pos is the word's ordinal in the text, counting from 0. Words longer
	// than MaxTokenBytes take a position without producing a token.
	Pos int
}

// Tokenize splits text into words and folds each one (see Fold).
//
// A word is a run of letters and digits, together with the combining marks
// that follow them; everything else (spaces, punctuation, symbols, invalid
// UTF-8) separates words, so "example@foo.bar" yields example, foo and bar.
// Han, Hiragana and Katakana characters are one word each: those scripts do
// not separate words by spaces, and a character-level term still lets a query
// find them. No stop words are removed.
func Tokenize(text string) []Token {
	return AppendTokens(make([]Token, 0, len(text)/5+1), text)
}

// AppendTokens appends the tokens of text to dst and returns the extended
// slice, so that indexing many values can reuse one buffer.
func AppendTokens(dst []Token, text string) []Token {
	pos := 0
	emit := func(start, end int) {
		if end-start <= MaxTokenBytes {
			if term := fold(text[start:end]); term != "" {
				dst = append(dst, Token{Term: term, Start: start, End: end, Pos: pos})
			}
		}
		pos++
	}
	start := -1 // start of the word being read, or -1 between words
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if isASCIIWord(c) {
				if start < 0 {
					start = i
				}
			} else if start >= 0 {
				emit(start, i)
				start = -1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if start >= 0 {
				emit(start, i)
				start = -1
			}
		case isSingleCharWord(r):
			if start >= 0 {
				emit(start, i)
			}
			end := i + size
			for end < len(text) {
				m, n := utf8.DecodeRuneInString(text[end:])
				if !unicode.IsMark(m) {
					break
				}
				end += n
			}
			emit(i, end)
			start = -1
			i = end
			continue
		case unicode.IsLetter(r) || unicode.IsNumber(r):
			if start < 0 {
				start = i
			}
		case unicode.IsMark(r):
			// A mark continues the word it follows; on its own it is not one.
		default:
			if start >= 0 {
				emit(start, i)
				start = -1
			}
		}
		i += size
	}
	if start >= 0 {
		emit(start, len(text))
	}
	return dst
}

// Terms returns the distinct terms of text in order of first occurrence: the
// terms a query made of text looks up.
func Terms(text string) []string {
	toks := Tokenize(text)
	terms := make([]string, 0, len(toks))
	seen := make(map[string]struct{}, len(toks))
	for _, t := range toks {
		if _, ok := seen[t.Term]; !ok {
			seen[t.Term] = struct{}{}
			terms = append(terms, t.Term)
		}
	}
	return terms
}

func isASCIIWord(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isSingleCharWord(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// Fold maps a word to its indexed form: lowercase, without accents.
//
// Each character is case-folded (lower of upper, so Σ, σ and ς, and I, i and
// ı, all meet), accents are removed by decomposing (NFD) and dropping the
// marks of the combining-diacritics blocks, and the result is recomposed
// (NFC). Marks outside those blocks (Indic vowel signs, Hebrew points, Arabic
// harakat, kana voicing) are kept: there they change the word rather than
// decorate a letter. A few letters with no decomposition are spelt out as
// their usual Latin equivalents: ß → ss, æ → ae, œ → oe, ø → o, ł → l,
// đ/ð → d, þ → th, ħ → h, ŧ → t.
func Fold(s string) string {
	return fold(s)
}

func fold(s string) string {
	ascii, upper := true, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if 'A' <= c && c <= 'Z' {
			upper = true
		}
	}
	if ascii {
		if !upper {
			return s
		}
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			}
		}
		return string(b)
	}
	if f, ok := foldChars(s); ok {
		return f
	}
	return foldSlow(s)
}

// foldSlow is Fold by definition: decompose, drop diacritics, case-fold and
// spell out character by character, recompose.
func foldSlow(s string) string {
	d := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(d))
	for _, r := range d {
		if isDiacritic(r) {
			continue
		}
		r = unicode.ToLower(unicode.ToUpper(r))
		if sp, ok := spelt[r]; ok {
			b.WriteString(sp)
			continue
		}
		b.WriteRune(r)
	}
	return norm.NFC.String(b.String())
}

// foldChars folds s one character at a time, which gives foldSlow's result
// when every character starts a normalization segment (no combining mark
// follows it) and folds on its own to characters that do too: then
// normalization never looks across characters. That covers most text
// (accented Latin, Greek, Cyrillic, CJK, Hangul) at a fraction of the cost
// of normalizing. It reports false when s needs foldSlow.
func foldChars(s string) (string, bool) {
	table := latinGreekCyrillic()
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b = append(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return "", false
		}
		if int(r) < len(table) {
			f := table[r]
			if !f.ok {
				return "", false
			}
			b = append(b, f.s...)
			i += n
			continue
		}
		// Elsewhere only characters that normalization and case folding
		// leave alone.
		p := norm.NFC.PropertiesString(s[i:])
		if !p.BoundaryBefore() || p.Decomposition() != nil || isDiacritic(r) || unicode.ToLower(unicode.ToUpper(r)) != r {
			return "", false
		}
		b = append(b, s[i:i+n]...)
		i += n
	}
	return string(b), true
}

// foldEntry is the fold of one character, valid when ok.
type foldEntry struct {
	s  string
	ok bool
}

// latinGreekCyrillic folds the characters below U+0530 (the Latin blocks,
// IPA, Greek and Cyrillic) one at a time, computed once with foldSlow. An
// entry is ok when the character and every character of its fold start a
// normalization segment.
var latinGreekCyrillic = sync.OnceValue(func() *[0x530]foldEntry {
	var t [0x530]foldEntry
	for r := range rune(len(t)) {
		src := string(r)
		if !norm.NFC.PropertiesString(src).BoundaryBefore() {
			continue
		}
		f := foldSlow(src)
		ok := true
		for i := 0; i < len(f); {
			p := norm.NFC.PropertiesString(f[i:])
			ok = ok && p.BoundaryBefore()
			i += max(p.Size(), 1)
		}
		t[r] = foldEntry{s: f, ok: ok}
	}
	return &t
})

// spelt holds the lowercase letters Fold replaces by a Latin spelling.
var spelt = map[rune]string{
	'ß': "ss", 'æ': "ae", 'œ': "oe", 'ø': "o", 'ł': "l",
	'đ': "d", 'ð': "d", 'þ': "th", 'ħ': "h", 'ŧ': "t",
}

// isDiacritic reports whether r is in one of the combining-diacritics blocks.
func isDiacritic(r rune) bool {
	return 0x0300 <= r && r <= 0x036F || // Combining Diacritical Marks
		0x1AB0 <= r && r <= 0x1AFF || // … Extended
		0x1DC0 <= r && r <= 0x1DFF || // … Supplement
		0x20D0 <= r && r <= 0x20FF || // … for Symbols
		0xFE20 <= r && r <= 0xFE2F // Combining Half Marks
}
