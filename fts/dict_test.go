package fts

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	vlev "github.com/blevesearch/vellum/levenshtein"
)

// editDistance is the reference distance Fuzzy must agree with: Levenshtein
// over characters where swapping two adjacent characters is one edit
// (optimal string alignment), computed with the full matrix.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// bruteFuzzy scans every term: what Fuzzy must return, and what it must beat.
func bruteFuzzy(sorted []string, term string, maxDist, limit int) []Match {
	k := Edits(term, maxDist)
	var out []Match
	for i, t := range sorted {
		if k == 0 {
			if t == term {
				out = append(out, Match{Term: t, ID: uint64(i)})
			}
			continue
		}
		if abs(utf8.RuneCountInString(t)-utf8.RuneCountInString(term)) > k {
			continue
		}
		if dist := editDistance(t, term); dist <= k {
			out = append(out, Match{Term: t, ID: uint64(i), Dist: dist})
		}
	}
	slices.SortFunc(out, func(a, b Match) int {
		return cmp.Or(cmp.Compare(a.Dist, b.Dist), cmp.Compare(a.Term, b.Term))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// syllables make pronounceable words with many near neighbours, a few of them
// accented or in another script, so automata are exercised on multi-byte
// characters too.
var syllables = []string{
	"ba", "be", "bi", "bo", "bu", "ca", "ce", "co", "da", "de", "di", "do",
	"fa", "fe", "ga", "go", "ha", "he", "ka", "ki", "la", "le", "li", "lo",
	"ma", "me", "mi", "mo", "na", "ne", "ni", "no", "pa", "pe", "pi", "po",
	"ra", "re", "ri", "ro", "sa", "se", "si", "so", "ta", "te", "ti", "to",
	"va", "ve", "za", "zo", "an", "en", "in", "on", "ar", "er", "or", "st",
	"é", "ñ", "ö", "ç", "日", "本", "ß", "ch", "th", "sh", "x", "q",
}

func randomWord(r *rand.Rand) string {
	var b strings.Builder
	for n := 1 + r.IntN(4); n > 0; n-- {
		b.WriteString(syllables[r.IntN(len(syllables))])
	}
	return b.String()
}

// randomWords returns n distinct sorted words, the same for the same seed.
func randomWords(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 0))
	seen := make(map[string]bool, n)
	words := make([]string, 0, n)
	for len(words) < n {
		w := randomWord(r)
		if !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	slices.Sort(words)
	return words
}

// typo applies one random edit: substitution, insertion, deletion or
// transposition of characters.
func typo(r *rand.Rand, w string) string {
	rs := []rune(w)
	letters := []rune("abcdefghijklmnoprstuvzéñö日")
	c := letters[r.IntN(len(letters))]
	switch op := r.IntN(4); {
	case op == 0 && len(rs) > 0:
		rs[r.IntN(len(rs))] = c
	case op == 1:
		i := r.IntN(len(rs) + 1)
		rs = slices.Insert(rs, i, c)
	case op == 2 && len(rs) > 1:
		i := r.IntN(len(rs))
		rs = slices.Delete(rs, i, i+1)
	case len(rs) > 1:
		i := r.IntN(len(rs) - 1)
		rs[i], rs[i+1] = rs[i+1], rs[i]
	}
	return string(rs)
}

func TestEditDistance(t *testing.T) {
	f := func(a, b string, want int) {
		t.Helper()
		if got := editDistance(a, b); got != want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", a, b, got, want)
		}
		for k := 1; k <= MaxEdits; k++ {
			a1 := newLevenshtein(a, k)
			if got := a1.distance(b); got != min(want, k+1) {
				t.Errorf("distance(%q, %q) within %d = %d, want %d", a, b, k, got, min(want, k+1))
			}
			a1.free()
		}
	}
	f("", "", 0)
	f("abc", "abc", 0)
	f("abc", "", 3)
	f("kitten", "sitting", 3)
	f("abcd", "abdc", 1) // transposition
	f("ca", "abc", 3)    // optimal string alignment: no edit of a transposed pair
	f("café", "cafe", 1) // characters, not bytes
	f("日本", "本日", 1)
}

func TestEdits(t *testing.T) {
	f := func(term string, fz, want int) {
		t.Helper()
		if got := Edits(term, fz); got != want {
			t.Errorf("Edits(%q, %d) = %d, want %d", term, fz, got, want)
		}
	}
	f("ab", 2, 0)
	f("日本", 1, 0) // two characters, six bytes
	f("abc", 1, 1)
	f("abc", 2, 2)
	f("abcdef", 5, 2)
	f("abcdef", 0, 0)
	f("abcdef", -1, 0)
}

func TestDictExactPrefix(t *testing.T) {
	d, err := BuildDict([]string{"new", "york", "newark", "news", "new", "newt", "nexus", "ne", "ñu", "\xff\xff", "\xff\xffa"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 10 {
		t.Fatalf("Len = %d, want 10", d.Len())
	}
	exact := func(term string, wantID uint64, wantOK bool) {
		t.Helper()
		id, ok := d.Exact(term)
		if id != wantID || ok != wantOK {
			t.Errorf("Exact(%q) = %d, %v, want %d, %v", term, id, ok, wantID, wantOK)
		}
	}
	// Sorted: ne new newark news newt nexus york ñu \xff\xff \xff\xffa
	exact("ne", 0, true)
	exact("new", 1, true)
	exact("york", 6, true)
	exact("ñu", 7, true)
	exact("n", 0, false)
	exact("", 0, false)
	prefix := func(p string, limit int, want string) {
		t.Helper()
		var got []string
		for _, m := range d.Prefix(p, limit) {
			if m.Dist != 0 {
				t.Errorf("Prefix(%q): %q has distance %d", p, m.Term, m.Dist)
			}
			got = append(got, m.Term)
		}
		if s := strings.Join(got, " "); s != want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", p, limit, s, want)
		}
	}
	prefix("new", 0, "new newark news newt")
	prefix("new", 2, "new newark")
	prefix("ne", -1, "ne new newark news newt nexus")
	prefix("newa", 0, "newark")
	prefix("q", 0, "")
	prefix("ñ", 0, "ñu")
	prefix("", 3, "ne new newark")
	prefix("\xff", 0, "\xff\xff \xff\xffa")
	prefix("\xff\xff", 0, "\xff\xff \xff\xffa")

	if _, err := NewDict([]string{"b", "a"}); err == nil {
		t.Error("NewDict accepted unsorted terms")
	}
	if _, err := NewDict([]string{"a", "a"}); err == nil {
		t.Error("NewDict accepted a repeated term")
	}
	empty, err := NewDict(nil)
	if err != nil {
		t.Fatal(err)
	}
	if empty.Len() != 0 || len(empty.Prefix("", 0)) != 0 || len(empty.Fuzzy("abc", 2, 0)) != 0 {
		t.Error("empty dictionary returned terms")
	}
}

func TestDictFuzzy(t *testing.T) {
	d, err := BuildDict([]string{"new", "news", "newt", "now", "york", "yolk", "yoke", "ne", "an", "on", "no", "café", "cafe", "cafés"})
	if err != nil {
		t.Fatal(err)
	}
	f := func(term string, dist, limit int, want string) {
		t.Helper()
		var got []string
		for _, m := range d.Fuzzy(term, dist, limit) {
			got = append(got, m.Term+":"+string(rune('0'+m.Dist)))
		}
		if s := strings.Join(got, " "); s != want {
			t.Errorf("Fuzzy(%q, %d, %d) = %q, want %q", term, dist, limit, s, want)
		}
	}
	f("new", 0, 0, "new:0")
	f("new", 1, 0, "new:0 ne:1 news:1 newt:1 now:1")
	f("new", 1, 2, "new:0 ne:1")
	f("nwe", 1, 0, "ne:1 new:1") // a transposition is one edit
	f("york", 1, 0, "york:0 yolk:1")
	f("york", 2, 0, "york:0 yolk:1 yoke:2")
	f("cafe", 1, 0, "cafe:0 café:1")
	f("cafe", 2, 0, "cafe:0 café:1 cafés:2")
	f("no", 2, 0, "no:0") // two characters: exact only
	f("on", 1, 0, "on:0")
	f("xy", 2, 0, "")
	f("zzzz", 2, 0, "")
	f("newz", 0, 0, "")
	f("newz", 1, 0, "new:1 news:1 newt:1")
	f("newz", 9, 0, "new:1 news:1 newt:1 ne:2 now:2") // capped at MaxEdits
}

func TestDictFuzzyAgainstBruteForce(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		words := randomWords(seed, 3000)
		d, err := NewDict(words)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, 1))
		for i := 0; i < 300; i++ {
			q := words[r.IntN(len(words))]
			for n := r.IntN(3); n > 0; n-- {
				q = typo(r, q)
			}
			dist, limit := 1+r.IntN(2), 0
			if r.IntN(4) == 0 {
				limit = 1 + r.IntN(5)
			}
			got := d.Fuzzy(q, dist, limit)
			want := bruteFuzzy(words, q, dist, limit)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d: Fuzzy(%q, %d, %d)\n got %v\nwant %v", seed, q, dist, limit, got, want)
			}
			for _, m := range got {
				if e := editDistance(q, m.Term); e != m.Dist {
					t.Fatalf("Fuzzy(%q): %q reported at distance %d, is %d", q, m.Term, m.Dist, e)
				}
			}
		}
	}
}

// TestDictFuzzyAgainstAutomaton checks the walk against the deterministic
// Levenshtein automata of vellum (with transpositions), which the
// dictionary used to build for every query word: the same terms at the
// same distances, on words with multi-byte characters and long ones.
func TestDictFuzzyAgainstAutomaton(t *testing.T) {
	builders := map[int]*vlev.LevenshteinAutomatonBuilder{}
	for _, k := range []int{1, 2} {
		lb, err := vlev.NewLevenshteinAutomatonBuilder(uint8(k), true)
		if err != nil {
			t.Fatal(err)
		}
		builders[k] = lb
	}
	compared := 0
	for _, seed := range []uint64{4, 5} {
		words := randomWords(seed, 5000)
		r := rand.New(rand.NewPCG(seed, 2))
		for range 20 {
			w := ""
			for range 8 + r.IntN(30) {
				w += syllables[r.IntN(len(syllables))]
			}
			words = append(words, w)
		}
		d, err := BuildDict(words)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 400; i++ {
			q := words[r.IntN(len(words))]
			for n := r.IntN(4); n > 0; n-- {
				q = typo(r, q)
			}
			k := 1 + r.IntN(2)
			got := d.Fuzzy(q, k, 0)
			k = Edits(q, k)
			if k == 0 {
				continue
			}
			dfa, err := builders[k].BuildDfa(q, uint8(k))
			if err != nil {
				t.Fatal(err)
			}
			var want []Match
			it, err := d.fst.Search(dfa, nil, nil)
			for err == nil {
				key, v := it.Current()
				_, dist := dfa.MatchAndDistance(string(key))
				want = append(want, Match{Term: string(key), ID: v, Dist: int(dist)})
				err = it.Next()
			}
			slices.SortFunc(want, func(a, b Match) int {
				return cmp.Or(cmp.Compare(a.Dist, b.Dist), cmp.Compare(a.Term, b.Term))
			})
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d: Fuzzy(%q, %d)\n got %v\nwant %v", seed, q, k, got, want)
			}
			compared += len(want)
		}
	}
	if compared < 1000 {
		t.Fatalf("only %d matches compared", compared)
	}
}

func TestDictLongTerm(t *testing.T) {
	long := strings.Repeat("abcdefghij", 30)
	d, err := BuildDict([]string{long, long[:len(long)-1], "abc"})
	if err != nil {
		t.Fatal(err)
	}
	got := d.Fuzzy(long, 2, 0)
	if len(got) == 0 || got[0].Term != long || got[0].Dist != 0 {
		t.Fatalf("Fuzzy(long) = %v, want the exact term first", got)
	}
}

// TestDictConcurrent runs lookups from several goroutines (meaningful under
// -race) and checks they agree with the same lookups run alone.
func TestDictConcurrent(t *testing.T) {
	words := randomWords(9, 2000)
	d, err := NewDict(words)
	if err != nil {
		t.Fatal(err)
	}
	queries := words[:50]
	want := make([][]Match, len(queries))
	for i, q := range queries {
		want[i] = d.Fuzzy(q, 2, 0)
	}
	errs := make(chan string, 4)
	for range 4 {
		go func() {
			for i, q := range queries {
				if got := d.Fuzzy(q, 2, 0); !slices.Equal(got, want[i]) {
					errs <- q
					return
				}
				d.Prefix(q, 5)
				d.Exact(q)
			}
			errs <- ""
		}()
	}
	for range 4 {
		if q := <-errs; q != "" {
			t.Errorf("concurrent Fuzzy(%q) differs", q)
		}
	}
}
