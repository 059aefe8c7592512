package fts

import (
	"fmt"
	"strings"
	"testing"
)

// formatTokens prints tokens one per line as "term start end pos".
func formatTokens(toks []Token) string {
	var b strings.Builder
	for _, t := range toks {
		fmt.Fprintf(&b, "%s %d %d %d\n", t.Term, t.Start, t.End, t.Pos)
	}
	return b.String()
}

func TestTokenize(t *testing.T) {
	f := func(text, want string) {
		t.Helper()
		if got := formatTokens(Tokenize(text)); got != want {
			t.Errorf("Tokenize(%q) =\n%swant\n%s", text, got, want)
		}
	}
	f("", "")
	f("  \t\n", "")
	f("Hello", "hello 0 5 0\n")
	f("hello world", "hello 0 5 0\nworld 6 11 1\n")
	f("  New-York,  CITY! ", "new 2 5 0\nyork 6 10 1\ncity 13 17 2\n")
	// Punctuation separates, so a word matches inside an e-mail address or URL.
	f("example@foo.bar", "example 0 7 0\nfoo 8 11 1\nbar 12 15 2\n")
	f("https://x.io/a_b?q=1", "https 0 5 0\nx 8 9 1\nio 10 12 2\na 13 14 3\nb 15 16 4\nq 17 18 5\n1 19 20 6\n")
	f("don't", "don 0 3 0\nt 4 5 1\n")
	f("3.14 x86_64 A1b2", "3 0 1 0\n14 2 4 1\nx86 5 8 2\n64 9 11 3\na1b2 12 16 4\n")
	// No stop words.
	f("The a of", "the 0 3 0\na 4 5 1\nof 6 8 2\n")
	// Accents fold away; offsets stay those of the source bytes.
	f("Café", "cafe 0 5 0\n")
	f("cafe\u0301 x", "cafe 0 6 0\nx 7 8 1\n") // decomposed é
	f("ÉCOLE Über naïve", "ecole 0 6 0\nuber 7 12 1\nnaive 13 19 2\n")
	f("Straße ÆSIR Øre Łódź", "strasse 0 7 0\naesir 8 13 1\nore 14 18 2\nlodz 19 26 3\n")
	f("ΣΊΣΥΦΟΣ σίσυφος", "σισυφοσ 0 14 0\nσισυφοσ 15 29 1\n") // final sigma folds too
	f("İstanbul ıi", "istanbul 0 9 0\nii 10 13 1\n")
	f("Привет, МИР", "привет 0 12 0\nмир 14 20 1\n")
	f("ＡＢＣ", "ａｂｃ 0 9 0\n") // fullwidth letters lowercase but stay fullwidth
	// Han and kana: one character per word; Hangul keeps its words.
	f("東京タワー", "東 0 3 0\n京 3 6 1\nタ 6 9 2\nワ 9 12 3\nー 12 15 4\n")
	f("ab東cd", "ab 0 2 0\n東 2 5 1\ncd 5 7 2\n")
	f("한국어 텍스트", "한국어 0 9 0\n텍스트 10 19 1\n")
	// Marks continue a word but do not start one; Indic vowel signs stay.
	f("\u0301abc", "abc 2 5 0\n")
	f("हिन्दी", "हिन्दी 0 18 0\n")
	// Invalid UTF-8 and symbols separate words.
	f("ab\xffcd", "ab 0 2 0\ncd 3 5 1\n")
	f("a☃b 😀c", "a 0 1 0\nb 4 5 1\nc 10 11 2\n")
	// Over-long words are dropped but keep their position.
	long := strings.Repeat("x", MaxTokenBytes+1)
	f("a "+long+" b", fmt.Sprintf("a 0 1 0\nb %d %d 2\n", MaxTokenBytes+4, MaxTokenBytes+5))
	f(long[1:], fmt.Sprintf("%s 0 %d 0\n", long[1:], MaxTokenBytes))
}

func TestFold(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
		if again := Fold(want); again != want {
			t.Errorf("Fold(%q) = %q: not idempotent", want, again)
		}
	}
	f("", "")
	f("abc", "abc")
	f("ABC", "abc")
	f("Crème Brûlée", "creme brulee")
	f("ẞ", "ss")
	f("ǅ", "ǆ")
	f("K", "k") // Kelvin sign
	f("Ångström", "angstrom")
	f("ﬁ", "ﬁ") // ligatures are a compatibility mapping, not folded
}

func TestTerms(t *testing.T) {
	f := func(text, want string) {
		t.Helper()
		if got := strings.Join(Terms(text), " "); got != want {
			t.Errorf("Terms(%q) = %q, want %q", text, got, want)
		}
	}
	f("", "")
	f("New new NEW york", "new york")
	f("b a b c", "b a c")
}

// TestFoldChars checks the character-at-a-time fold against the definition
// for every character alone and followed by characters that combine with
// what precedes them.
func TestFoldChars(t *testing.T) {
	follow := []string{"", "\u0301", "a", "é", "\u0323", "\u11a8", "\u3099", "\u093c", "\u0bbe", "\u20dd"}
	last := rune(0x10ffff)
	if testing.Short() {
		follow, last = follow[:2], 0xffff
	}
	for r := rune(0); r <= last; r++ {
		if 0xd800 <= r && r <= 0xdfff {
			continue
		}
		for _, next := range follow {
			s := string(r) + next
			if got, want := fold(s), foldSlow(s); got != want {
				t.Fatalf("fold(%q) = %q, want %q", s, got, want)
			}
		}
	}
}

func TestAppendTokens(t *testing.T) {
	buf := AppendTokens(nil, "one two")
	buf = AppendTokens(buf, "Three")
	if got, want := formatTokens(buf), "one 0 3 0\ntwo 4 7 1\nthree 0 5 0\n"; got != want {
		t.Errorf("AppendTokens =\n%swant\n%s", got, want)
	}
	reused := AppendTokens(buf[:0], "four")
	if &reused[0] != &buf[0] || formatTokens(reused) != "four 0 4 0\n" {
		t.Errorf("AppendTokens(buf[:0]) did not reuse the buffer: %v", reused)
	}
}
