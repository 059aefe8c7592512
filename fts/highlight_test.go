package fts

import (
	"html"
	"strings"
	"testing"
	"unicode/utf8"
)

// matchTerms returns a matcher for the given folded terms.
func matchTerms(terms ...string) func(string) bool {
	set := make(map[string]bool, len(terms))
	for _, t := range terms {
		set[t] = true
	}
	return func(t string) bool { return set[t] }
}

func TestHighlight(t *testing.T) {
	f := func(text string, terms []string, encodeHTML bool, want ...string) {
		t.Helper()
		got := Highlight(text, matchTerms(terms...), encodeHTML)
		if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != len(want) {
			t.Errorf("Highlight(%q, %v, %v) =\n%q\nwant\n%q", text, terms, encodeHTML, got, want)
		}
	}
	terms := func(s ...string) []string { return s }
	// Nothing matched: no snippet.
	f("hello world", terms("nope"), true)
	f("", terms("a"), true)
	// Short values come back whole.
	f("hello world", terms("world"), true, "hello <em>world</em>")
	f("Hello, World!", terms("hello", "world"), true, "<em>Hello</em>, <em>World</em>!")
	// Adjacent matches separated by whitespace share one pair.
	f("New York City", terms("new", "york"), true, "<em>New York</em> City")
	f("New  York\tNew", terms("new", "york"), true, "<em>New  York\tNew</em>")
	f("new-york", terms("new", "york"), true, "<em>new</em>-<em>york</em>")
	f("東京タワー", terms("東", "京"), true, "<em>東京</em>タワー")
	// Escaping: text outside and inside the markers, never the markers.
	f(`<b>&"'bold'</b>`, terms("bold"), true, `&lt;b&gt;&amp;&quot;&#39;<em>bold</em>&#39;&lt;/b&gt;`)
	f(`<b>&"'bold'</b>`, terms("bold"), false, `<b>&"'<em>bold</em>'</b>`)
	f(`a<b c`, terms("a", "b"), true, `<em>a</em>&lt;<em>b</em> c`)
	f(`Tom & Jerry`, terms("tom", "jerry"), true, `<em>Tom</em> &amp; <em>Jerry</em>`)
	// Matches are on folded terms; the text keeps its spelling.
	f("Crème BRÛLÉE", terms("creme", "brulee"), true, "<em>Crème BRÛLÉE</em>")
	f("Ünïcödé ✓ naïve", terms("naive"), true, "Ünïcödé ✓ <em>naïve</em>")
	f("ab\xffcd", terms("cd"), false, "ab\xff<em>cd</em>")
	// Exactly 100 characters (in runes, not bytes) is still short.
	hundred := strings.Repeat("é", 94) + " match"
	f(hundred, terms("match"), false, strings.Repeat("é", 94)+" <em>match</em>")
}

func TestHighlightFragments(t *testing.T) {
	f := func(text string, terms []string, want ...string) {
		t.Helper()
		got := Highlight(text, matchTerms(terms...), true)
		if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != len(want) {
			t.Errorf("Highlight(%q, %v) =\n%q\nwant\n%q", text, terms, got, want)
		}
		for _, s := range got {
			plain := html.UnescapeString(strings.NewReplacer("<em>", "", "</em>", "").Replace(s))
			if n := utf8.RuneCountInString(plain); n > SnippetChars && strings.ContainsRune(plain, ' ') {
				t.Errorf("fragment of %d characters: %q", n, s)
			}
		}
	}
	words := func(prefix string, n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = prefix + string(rune('a'+i%26))
		}
		return strings.Join(w, " ")
	}
	filler := words("w", 40) // 40 three-character words: 119 characters
	// A match in the middle: up to 30 characters of lead, then up to 100 in all.
	f(filler+" needle "+filler, []string{"needle"},
		"we wf wg wh wi wj wk wl wm wn <em>needle</em> wa wb wc wd we wf wg wh wi wj wk wl wm wn wo wp wq wr ws wt wu")
	// At the start there is no lead; at the end the room left goes to lead.
	f("needle "+filler, []string{"needle"},
		"<em>needle</em> wa wb wc wd we wf wg wh wi wj wk wl wm wn wo wp wq wr ws wt wu wv ww wx wy wz wa wb wc wd we")
	f(filler+" needle", []string{"needle"},
		"wj wk wl wm wn wo wp wq wr ws wt wu wv ww wx wy wz wa wb wc wd we wf wg wh wi wj wk wl wm wn <em>needle</em>")
	// Matches close together share a fragment; far apart, each gets one.
	f(filler+" one two "+filler+" three "+filler, []string{"one", "two", "three"},
		"we wf wg wh wi wj wk wl wm wn <em>one two</em> wa wb wc wd we wf wg wh wi wj wk wl wm wn wo wp wq wr ws wt wu",
		"we wf wg wh wi wj wk wl wm wn <em>three</em> wa wb wc wd we wf wg wh wi wj wk wl wm wn wo wp wq wr ws wt wu")
	// Escaping in fragments.
	f(filler+` "x<y" `+filler, []string{"x"},
		`wf wg wh wi wj wk wl wm wn &quot;<em>x</em>&lt;y&quot; wa wb wc wd we wf wg wh wi wj wk wl wm wn wo wp wq wr ws wt wu wv`)
	// At most MaxFragments fragments, in text order.
	many := strings.Repeat("hit "+filler+" ", 8)
	got := Highlight(many, matchTerms("hit"), true)
	if len(got) != MaxFragments {
		t.Errorf("%d fragments, want %d", len(got), MaxFragments)
	}
	// A single word longer than a fragment is returned whole.
	long := strings.Repeat("z", 150)
	f(filler+" "+long+" "+filler, []string{long}, "<em>"+long+"</em>")
	// Every match of a dense text is covered, fragments do not overlap.
	dense := strings.Repeat("ab ", 100)
	got = Highlight(dense, matchTerms("ab"), false)
	total := 0
	for _, s := range got {
		total += strings.Count(s, "ab")
	}
	if len(got) != 4 || total != 100 {
		t.Errorf("dense text: %d fragments covering %d matches, want 4 and 100: %q", len(got), total, got)
	}
}
