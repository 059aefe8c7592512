package fts

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestSearch runs testdata/search, the golden file of the package's
// operations. Commands:
//
//	tokenize                  input: a text; one token per line
//	dict                      input: terms separated by white space
//	exact | prefix [limit=n]  input: one term per line, looked up in the dict
//	fuzzy dist=d [limit=n]    input: one term per line, looked up in the dict
//	highlight terms=(a, …) [html=false]
//	                          input: a text; one snippet per line
//	score docs=N avglen=a len=l [weight=w]
//	                          input: one "hit word=i tf=t df=n [dist=d] [completion]" per line
//	boost value factor=f [applies=false]             input: equal or different per line
//	boost numeric factor=f [modifier=m] [applies=false] input: a number or null per line
//	boost date scale=s decay=d now=t [origin=t] [factor=f] [applies=false]
//	                          input: an RFC 3339 date or null per line
//	docs                      input: one "id: text" per line, a column to search
//	search [fuzziness=f] [prefix=phrase]
//	                          input: a query; ranked hits with score and highlight
func TestSearch(t *testing.T) {
	var dict *Dict
	var docs []testDoc
	datadriven.RunTest(t, "testdata/search", func(t *testing.T, td *datadriven.TestData) string {
		switch td.Cmd {
		case "tokenize":
			var b strings.Builder
			for _, tok := range Tokenize(td.Input) {
				fmt.Fprintf(&b, "%d %d-%d %s", tok.Pos, tok.Start, tok.End, tok.Term)
				if src := td.Input[tok.Start:tok.End]; src != tok.Term {
					fmt.Fprintf(&b, " (%s)", src)
				}
				b.WriteString("\n")
			}
			return b.String()

		case "dict":
			var err error
			dict, err = BuildDict(strings.Fields(td.Input))
			if err != nil {
				return err.Error()
			}
			return fmt.Sprintf("%d terms\n", dict.Len())

		case "exact", "prefix", "fuzzy":
			limit, dist := 0, 0
			td.MaybeScanArgs(t, "limit", &limit)
			if td.Cmd == "fuzzy" {
				td.ScanArgs(t, "dist", &dist)
			}
			var b strings.Builder
			for _, q := range strings.Split(td.Input, "\n") {
				var ms []Match
				switch td.Cmd {
				case "exact":
					if id, ok := dict.Exact(q); ok {
						ms = []Match{{Term: q, ID: id}}
					}
				case "prefix":
					ms = dict.Prefix(q, limit)
				case "fuzzy":
					ms = dict.Fuzzy(q, dist, limit)
				}
				fmt.Fprintf(&b, "%s:", q)
				for _, m := range ms {
					fmt.Fprintf(&b, " %s", m.Term)
					if td.Cmd == "fuzzy" {
						fmt.Fprintf(&b, "/%d", m.Dist)
					} else {
						fmt.Fprintf(&b, "#%d", m.ID)
					}
				}
				b.WriteString("\n")
			}
			return b.String()

		case "highlight":
			var terms []string
			if arg, ok := td.Arg("terms"); ok {
				terms = arg.Vals
			}
			html := true
			td.MaybeScanArgs(t, "html", &html)
			snippets := Highlight(td.Input, matchTerms(terms...), html)
			if snippets == nil {
				return "no match\n"
			}
			return strings.Join(snippets, "\n") + "\n"

		case "score":
			return runScore(t, td)

		case "boost":
			return runBoost(t, td)

		case "docs":
			docs = docs[:0]
			for _, line := range strings.Split(td.Input, "\n") {
				id, text, _ := strings.Cut(line, ":")
				docs = append(docs, testDoc{id: id, text: strings.TrimSpace(text)})
			}
			return fmt.Sprintf("%d docs\n", len(docs))

		case "search":
			fuzziness, prefix := 1, "disabled"
			td.MaybeScanArgs(t, "fuzziness", &fuzziness)
			td.MaybeScanArgs(t, "prefix", &prefix)
			return testSearch(docs, td.Input, fuzziness, prefix == "phrase")

		default:
			t.Fatalf("unknown command %q", td.Cmd)
			return ""
		}
	})
}

func runScore(t *testing.T, td *datadriven.TestData) string {
	var st ColumnStats
	var fieldLen int
	weight := 1.0
	td.ScanArgs(t, "docs", &st.Docs)
	td.ScanArgs(t, "avglen", &st.AvgLen)
	td.ScanArgs(t, "len", &fieldLen)
	td.MaybeScanArgs(t, "weight", &weight)
	var hits []Hit
	var b strings.Builder
	for _, line := range strings.Split(td.Input, "\n") {
		_, args, err := datadriven.ParseLine(line)
		if err != nil {
			t.Fatal(err)
		}
		var h Hit
		for _, a := range args {
			var dest *int
			switch a.Key {
			case "word":
				dest = &h.Word
			case "tf":
				dest = &h.TF
			case "df":
				dest = &h.DocFreq
			case "dist":
				dest = &h.Dist
			case "completion":
				h.Completion = true
				continue
			default:
				t.Fatalf("unknown hit field %q", a.Key)
			}
			a.Scan(t, 0, dest)
		}
		hits = append(hits, h)
		idf := IDF(st.Docs, h.DocFreq)
		bm := TermBM25(idf, h.TF, fieldLen, st.AvgLen)
		fmt.Fprintf(&b, "%s: idf %.4f · bm25 %.4f · match %.4f = %.4f\n",
			strings.TrimSpace(line), idf, bm/idf, MatchFactor(h.Dist, h.Completion), bm*MatchFactor(h.Dist, h.Completion))
	}
	fmt.Fprintf(&b, "column score %.4f\n", ColumnScore(st, fieldLen, weight, hits))
	return b.String()
}

func runBoost(t *testing.T, td *datadriven.TestData) string {
	if len(td.CmdArgs) == 0 {
		t.Fatal("boost needs a kind: value, numeric or date")
	}
	applies := true
	td.MaybeScanArgs(t, "applies", &applies)
	factor := 1.0
	hasFactor := td.MaybeScanArgs(t, "factor", &factor)
	var b strings.Builder
	lines := strings.Split(td.Input, "\n")
	switch kind := td.CmdArgs[0].Key; kind {
	case "value":
		for _, l := range lines {
			fmt.Fprintf(&b, "%s: %g\n", l, ValueBoost(factor, l == "equal", applies))
		}
	case "numeric":
		mod := ""
		td.MaybeScanArgs(t, "modifier", &mod)
		m, err := ParseModifier(mod)
		if err != nil {
			return err.Error() + "\n"
		}
		for _, l := range lines {
			v, err := strconv.ParseFloat(l, 64)
			fmt.Fprintf(&b, "%s: %.4f\n", l, NumericBoost(factor, m, v, err == nil, applies))
		}
	case "date":
		var origin, scale, now string
		var decay float64
		td.MaybeScanArgs(t, "origin", &origin)
		td.ScanArgs(t, "scale", &scale)
		td.ScanArgs(t, "decay", &decay)
		td.ScanArgs(t, "now", &now)
		nowT, err := time.Parse(time.RFC3339Nano, now)
		if err != nil {
			t.Fatal(err)
		}
		var fp *float64
		if hasFactor {
			fp = &factor
		}
		db, err := NewDateDecay(origin, scale, decay, fp, nowT)
		if err != nil {
			return err.Error() + "\n"
		}
		for _, l := range lines {
			d, err := time.Parse(time.RFC3339Nano, l)
			fmt.Fprintf(&b, "%s: %.4f\n", l, db.Boost(d, err == nil, applies))
		}
	default:
		t.Fatalf("unknown booster %q", kind)
	}
	return b.String()
}

type testDoc struct{ id, text string }

// testSearch is the smallest search these pieces make: expand each query word
// through the dictionary of the docs (fuzzy, or prefix for the last word of a
// phrase), score every doc that has an expansion with ColumnScore, require
// the words in order for a phrase, rank by score then id, and highlight.
func testSearch(docs []testDoc, query string, fuzziness int, phrase bool) string {
	toks := make([][]Token, len(docs))
	var all []string
	df := map[string]int{}
	totalLen := 0
	for i, d := range docs {
		toks[i] = Tokenize(d.text)
		totalLen += len(toks[i])
		seen := map[string]bool{}
		for _, t := range toks[i] {
			all = append(all, t.Term)
			if !seen[t.Term] {
				seen[t.Term] = true
				df[t.Term]++
			}
		}
	}
	dict, err := BuildDict(all)
	if err != nil {
		return err.Error()
	}
	st := ColumnStats{Docs: len(docs), AvgLen: float64(totalLen) / float64(max(len(docs), 1))}

	words := Tokenize(query)
	if !phrase {
		words = words[:0]
		for _, term := range Terms(query) {
			words = append(words, Token{Term: term})
		}
	}
	expansions := make([]map[string]Match, len(words)) // per word: term → how it was found
	matched := map[string]bool{}
	for i, w := range words {
		var ms []Match
		if phrase && i == len(words)-1 {
			ms = dict.Prefix(w.Term, 50)
		} else {
			ms = dict.Fuzzy(w.Term, fuzziness, 50)
		}
		expansions[i] = map[string]Match{}
		for _, m := range ms {
			expansions[i][m.Term] = m
			matched[m.Term] = true
		}
	}

	type result struct {
		id    string
		score float64
		snips []string
	}
	var results []result
	for di, d := range docs {
		if phrase && !hasPhrase(toks[di], expansions) {
			continue
		}
		tf := map[string]int{}
		for _, t := range toks[di] {
			tf[t.Term]++
		}
		var hits []Hit
		for wi, ex := range expansions {
			for term, m := range ex {
				if tf[term] > 0 {
					hits = append(hits, Hit{Word: wi, TF: tf[term], DocFreq: df[term], Dist: m.Dist, Completion: term != words[wi].Term})
				}
			}
		}
		if len(hits) == 0 {
			continue
		}
		s := ColumnScore(st, len(toks[di]), 1, hits)
		results = append(results, result{id: d.id, score: s, snips: Highlight(d.text, func(t string) bool { return matched[t] }, true)})
	}
	slices.SortFunc(results, func(a, b result) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.id, b.id))
	})
	if len(results) == 0 {
		return "no hits\n"
	}
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "%s %.4f %s\n", r.id, math.Round(r.score*1e4)/1e4, strings.Join(r.snips, " | "))
	}
	return b.String()
}

// hasPhrase reports whether toks hold, at consecutive positions, a term of
// each word's expansions in order.
func hasPhrase(toks []Token, expansions []map[string]Match) bool {
	if len(expansions) == 0 {
		return false
	}
	byPos := map[int]string{}
	for _, t := range toks {
		byPos[t.Pos] = t.Term
	}
	for _, t := range toks {
		ok := true
		for i, ex := range expansions {
			if term, found := byPos[t.Pos+i]; !found || !hasKey(ex, term) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func hasKey(m map[string]Match, k string) bool {
	_, ok := m[k]
	return ok
}
