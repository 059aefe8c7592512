package fts

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
)

// phraseCandidates returns the matching rows that may hold the query as a
// phrase: those where one searched column holds a term of every word. Only
// they are read to check the phrase. When a searched column has no field
// lengths, and so no postings, any matching row may hold the phrase there.
func (x *scorer) phraseCandidates() *roaring.Bitmap {
	for _, tc := range x.targets {
		if x.src.Lengths(tc.col.ID) == nil {
			return x.unionRows()
		}
	}
	out := roaring.New()
	for i := 0; i < len(x.groups); {
		// The groups of one column are consecutive, one per word found
		// there, in word order.
		col, j := x.groups[i].col, i
		for j < len(x.groups) && x.groups[j].col == col {
			j++
		}
		if j-i == len(x.words) {
			var all *roaring.Bitmap
			for _, g := range x.groups[i:j] {
				rows := make([]*roaring.Bitmap, 0, g.end-g.first)
				for _, p := range x.postings[g.first:g.end] {
					rows = append(rows, p.rows)
				}
				u := roaring.FastOr(rows...)
				if all == nil {
					all = u
				} else {
					all.And(u)
				}
			}
			out.Or(all)
		}
		i = j
	}
	return out
}

// verifyPhrase keeps the rows where some searched column holds the query
// words in a row, in order, the last one possibly as a prefix.
func (x *scorer) verifyPhrase(rows *roaring.Bitmap) (*roaring.Bitmap, error) {
	sets := make([]map[string]bool, len(x.words))
	for i, exps := range x.words {
		sets[i] = map[string]bool{}
		for _, ex := range exps {
			sets[i][ex.term] = true
		}
	}
	filter := x.phraseFilter()
	out := roaring.New()
	var rec codec.Record
	var toks []Token
	it := rows.Iterator()
	for n := 0; it.HasNext(); n++ {
		if n%ctxCheckRows == 0 {
			if err := x.ctx.Err(); err != nil {
				return nil, err
			}
		}
		row := it.Next()
		ok, err := x.src.Record(row, &rec)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		found := false
		for _, tc := range x.targets {
			v, has := rec.Get(tc.col.ID)
			if !has {
				continue
			}
			texts := []string{v.Str}
			if v.Kind == codec.KindStrings {
				texts = v.Strs
			}
			for _, text := range texts {
				if !filter.admits(text) {
					continue
				}
				toks = AppendTokens(toks[:0], text)
				if holdsPhrase(toks, sets) {
					found = true
					break
				}
			}
			if found {
				break
			}
		}
		if found {
			out.Add(row)
		}
	}
	return out, nil
}

// holdsPhrase reports whether consecutive tokens match the word sets in order.
func holdsPhrase(toks []Token, sets []map[string]bool) bool {
	for i := 0; i+len(sets) <= len(toks); i++ {
		ok := true
		for j, set := range sets {
			if toks[i+j].Pos != toks[i].Pos+j || !set[toks[i+j].Term] {
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

// phraseFilter is a quick test that a text must pass to hold the phrase,
// run before tokenizing it. An ASCII text's tokens are its runs of letters
// and digits, lowercased: a term among them is a substring of the
// lowercase text. So each word of the phrase needs one of its needles
// in the lowercase text: its terms, or for the word completed as a prefix
// the word itself, which every completion starts with; a needle that
// contains another is left out, a non-ASCII one too (no ASCII token
// matches it). Words with many needles are not tested; other texts always
// pass.
type phraseFilter struct {
	needles [][][]byte // by tested word, fewest needles first
	lower   []byte     // scratch: the lowercase text
}

// maxPhraseNeedles is how many needles a word may have and be tested.
const maxPhraseNeedles = 8

// phraseFilter returns the filter of the query's words.
func (x *scorer) phraseFilter() *phraseFilter {
	f := &phraseFilter{}
	for i, exps := range x.words {
		var terms []string
		completed := false
		for _, ex := range exps {
			if ex.completion {
				completed = true
			} else {
				terms = append(terms, ex.term)
			}
		}
		if completed {
			terms = append(terms, x.q.words[i])
		}
		slices.SortFunc(terms, func(a, b string) int { return len(a) - len(b) })
		var needles [][]byte
		for _, t := range terms {
			if !isASCII(t) || slices.ContainsFunc(needles, func(n []byte) bool { return strings.Contains(t, string(n)) }) {
				continue
			}
			needles = append(needles, []byte(t))
		}
		if len(needles) <= maxPhraseNeedles {
			f.needles = append(f.needles, needles)
		}
	}
	slices.SortStableFunc(f.needles, func(a, b [][]byte) int { return len(a) - len(b) })
	return f
}

// admits reports whether text may hold the phrase.
func (f *phraseFilter) admits(text string) bool {
	if len(f.needles) == 0 {
		return true
	}
	lower := f.lower[:0]
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= utf8.RuneSelf {
			return true
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower = append(lower, c)
	}
	f.lower = lower
	for _, needles := range f.needles {
		found := false
		for _, n := range needles {
			if bytes.Contains(lower, n) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
