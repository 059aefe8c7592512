package fts

import (
	"html"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// goldenInputs returns the inputs of the directives of testdata/search whose
// command is cmd, so the fuzz targets start from the cases reviewed there.
func goldenInputs(tb testing.TB, cmd string) []string {
	data, err := os.ReadFile("testdata/search")
	if err != nil {
		tb.Fatal(err)
	}
	var inputs []string
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		j := i + 1
		for j < len(lines) && lines[j] != "----" {
			j++
		}
		if fields[0] == cmd {
			inputs = append(inputs, strings.Join(lines[i+1:j], "\n"))
		}
		for i = j; i < len(lines) && lines[i] != ""; i++ { // skip the output
		}
	}
	return inputs
}

var fuzzSeeds = []string{
	"", " ", "a", "A", "é", "e\u0301", "\u0301", "\xff", "a\xffb", "東京", "ab東cd",
	"İ", "ß", "ẞ", "Σς", "ǅ", "\u0345", "ﬁ", "x\u0308\u0301", "한국어", "हिन्दी", "क़",
	strings.Repeat("x", MaxTokenBytes+1), strings.Repeat("é ", 80), `<em>a</em> & "b"`,
}

// FuzzTokenize checks that every token points at valid text that folds to
// its term and is a word on its own, in order, and that the fast fold agrees
// with its definition.
func FuzzTokenize(f *testing.F) {
	for _, s := range append(goldenInputs(f, "tokenize"), fuzzSeeds...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := fold(text), foldSlow(text); got != want {
			t.Fatalf("fold(%q) = %q, but foldSlow gives %q", text, got, want)
		}
		toks := Tokenize(text)
		prevEnd, prevPos := 0, -1
		for _, tok := range toks {
			if tok.Start < prevEnd || tok.End <= tok.Start || tok.End > len(text) || tok.Pos <= prevPos {
				t.Fatalf("Tokenize(%q): token %+v out of order or bounds (previous end %d, pos %d)", text, tok, prevEnd, prevPos)
			}
			src := text[tok.Start:tok.End]
			if !utf8.ValidString(src) {
				t.Fatalf("Tokenize(%q): token %+v covers invalid UTF-8", text, tok)
			}
			if tok.Term == "" || Fold(src) != tok.Term {
				t.Fatalf("Tokenize(%q): token %+v: Fold(%q) = %q", text, tok, src, Fold(src))
			}
			if again := Tokenize(src); len(again) != 1 || again[0] != (Token{Term: tok.Term, End: len(src)}) {
				t.Fatalf("Tokenize(%q): token %q re-tokenizes to %+v", text, src, again)
			}
			if Fold(tok.Term) != tok.Term {
				t.Fatalf("Fold is not idempotent on %q: %q", tok.Term, Fold(tok.Term))
			}
			prevEnd, prevPos = tok.End, tok.Pos
		}
	})
}

// FuzzHighlight checks that highlighting never panics, that markers pair up,
// that they enclose exactly the matched words, and that escaping round-trips
// to the source text.
func FuzzHighlight(f *testing.F) {
	for _, s := range goldenInputs(f, "highlight") {
		for _, q := range []string{"fox dog", "bold", "new york", "creme brulee"} {
			f.Add(s, q, true)
		}
	}
	for _, s := range fuzzSeeds {
		f.Add(s+" "+s, s, true)
		f.Add(s, "a", false)
	}
	f.Fuzz(func(t *testing.T, text, query string, encodeHTML bool) {
		terms := Terms(query)
		matched := func(term string) bool { return slices.Contains(terms, term) }
		snippets := Highlight(text, matched, encodeHTML)
		anyMatch := slices.ContainsFunc(Tokenize(text), func(tok Token) bool { return matched(tok.Term) })
		if anyMatch != (len(snippets) > 0) || len(snippets) > MaxFragments {
			t.Fatalf("Highlight(%q, %q): %d snippets, a word matched: %v", text, query, len(snippets), anyMatch)
		}
		if !encodeHTML && (strings.Contains(text, "<em>") || strings.Contains(text, "</em>")) {
			return // markers cannot be told from the text
		}
		for _, s := range snippets {
			var plain strings.Builder
			// check takes one stretch of snippet between markers.
			check := func(seg string, inside bool) {
				if encodeHTML {
					if strings.ContainsAny(seg, `<>"'`) {
						t.Fatalf("Highlight(%q, %q): unescaped text %q", text, query, seg)
					}
					seg = html.UnescapeString(seg)
				}
				for _, tok := range Tokenize(seg) {
					if matched(tok.Term) != inside {
						t.Fatalf("Highlight(%q, %q): %q marked %v, matched %v", text, query, tok.Term, inside, !inside)
					}
				}
				plain.WriteString(seg)
			}
			for inside := false; ; inside = !inside {
				marker, other := "<em>", "</em>"
				if inside {
					marker, other = other, marker
				}
				i, j := strings.Index(s, marker), strings.Index(s, other)
				if j >= 0 && (i < 0 || j < i) {
					t.Fatalf("Highlight(%q, %q): markers out of order in %q", text, query, s)
				}
				if i < 0 {
					if inside {
						t.Fatalf("Highlight(%q, %q): unclosed marker in %q", text, query, s)
					}
					check(s, false)
					break
				}
				check(s[:i], inside)
				s = s[i+len(marker):]
			}
			p := plain.String()
			if !strings.Contains(text, p) {
				t.Fatalf("Highlight(%q, %q): snippet text %q is not in the text", text, query, p)
			}
			if utf8.RuneCountInString(text) <= SnippetChars && p != text {
				t.Fatalf("Highlight(%q, %q): short text came back as %q", text, query, p)
			}
			if n := utf8.RuneCountInString(p); n > SnippetChars && len(Tokenize(p)) > 1 {
				t.Fatalf("Highlight(%q, %q): fragment of %d characters: %q", text, query, n, p)
			}
		}
	})
}
