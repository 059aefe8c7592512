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
	filter.sets = sets
	out := roaring.New()
	holds := func(rec *codec.Record) bool {
		for _, tc := range x.targets {
			v, has := rec.Get(tc.col.ID)
			if !has {
				continue
			}
			if v.Kind == codec.KindStrings {
				if slices.ContainsFunc(v.Strs, filter.holds) {
					return true
				}
			} else if filter.holds(v.Str) {
				return true
			}
		}
		return false
	}
	// The rows are read in ascending batches: one pass forward over the
	// records rather than a point read each.
	var buf [phraseBatch]uint32
	it := rows.ManyIterator()
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		if err := x.ctx.Err(); err != nil {
			return nil, err
		}
		batch := buf[:n]
		err := x.src.Records(batch, func(i int, rec *codec.Record) error {
			if holds(rec) {
				out.Add(batch[i])
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// phraseBatch is how many candidate rows a phrase check reads at once.
const phraseBatch = 1024

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
	// sets are the terms of each word, in phrase order (holds).
	sets []map[string]bool
	// Scratch: the lowercase text, and whether it is ASCII (admits); its
	// words (holds); the tokens of a text that is not ASCII.
	lower []byte
	ascii bool
	words []asciiWord
	toks  []Token
	// anchor is the word whose terms an ASCII text is searched for
	// (anchorTerms, those it may hold), the phrase then read around each
	// occurrence; -1 when no word has few enough terms, or every word is
	// completed as a prefix.
	anchor      int
	anchorTerms [][]byte
}

// asciiWord is a word of an ASCII text: lower[start:end], or none for a
// word longer than MaxTokenBytes, which only takes its position.
type asciiWord struct {
	start, end int
	none       bool
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
	f.anchor = -1
	for i, exps := range x.words {
		if slices.ContainsFunc(exps, func(ex expansion) bool { return ex.completion }) {
			continue
		}
		var terms [][]byte
		for _, ex := range exps {
			// No word of an ASCII text is another term: the anchor
			// keeps the terms one may be.
			if isASCII(ex.term) && len(ex.term) <= MaxTokenBytes {
				terms = append(terms, []byte(ex.term))
			}
		}
		if len(terms) <= maxPhraseNeedles && (f.anchor < 0 || len(terms) < len(f.anchorTerms)) {
			f.anchor, f.anchorTerms = i, terms
		}
	}
	return f
}

// admits reports whether text may hold the phrase.
func (f *phraseFilter) admits(text string) bool {
	lower := f.lower[:0]
	f.ascii = false
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
	f.lower, f.ascii = lower, true
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

// holds reports whether text holds the phrase of f.sets, as holdsPhrase
// over its tokens does. An ASCII text is not tokenized: its words are its
// runs of ASCII letters and digits, and their terms those runs lowercased,
// looked up where they lie in the lowercase text.
func (f *phraseFilter) holds(text string) bool {
	if !f.admits(text) {
		return false
	}
	if !f.ascii {
		f.toks = AppendTokens(f.toks[:0], text)
		return holdsPhrase(f.toks, f.sets)
	}
	if f.anchor >= 0 {
		return f.holdsAround()
	}
	lower, words := f.lower, f.words[:0]
	start := -1
	for i := 0; i <= len(lower); i++ {
		if i < len(lower) && isASCIIWord(lower[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			words = append(words, asciiWord{start: start, end: i, none: i-start > MaxTokenBytes})
			start = -1
		}
	}
	f.words = words
	for i := 0; i+len(f.sets) <= len(words); i++ {
		ok := true
		for j, set := range f.sets {
			w := words[i+j]
			if w.none || !set[string(lower[w.start:w.end])] {
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

// holdsAround reports whether the lowercase ASCII text holds the phrase:
// at an occurrence of a term of the anchor word that is a whole word,
// the words before and after it hold the other words' terms.
func (f *phraseFilter) holdsAround() bool {
	lower := f.lower
	for _, t := range f.anchorTerms {
		for off := 0; ; {
			i := bytes.Index(lower[off:], t)
			if i < 0 {
				break
			}
			start, end := off+i, off+i+len(t)
			off = start + 1
			if start > 0 && isASCIIWord(lower[start-1]) || end < len(lower) && isASCIIWord(lower[end]) {
				continue
			}
			if f.holdsBefore(start) && f.holdsAfter(end) {
				return true
			}
		}
	}
	return false
}

// holdsBefore reports whether the words of lower before offset at hold the
// terms of the words before the anchor, in order.
func (f *phraseFilter) holdsBefore(at int) bool {
	lower := f.lower
	for j := f.anchor - 1; j >= 0; j-- {
		end := at
		for end > 0 && !isASCIIWord(lower[end-1]) {
			end--
		}
		start := end
		for start > 0 && isASCIIWord(lower[start-1]) {
			start--
		}
		if start == end || end-start > MaxTokenBytes || !f.sets[j][string(lower[start:end])] {
			return false
		}
		at = start
	}
	return true
}

// holdsAfter reports whether the words of lower from offset at on hold the
// terms of the words after the anchor, in order.
func (f *phraseFilter) holdsAfter(at int) bool {
	lower := f.lower
	for j := f.anchor + 1; j < len(f.sets); j++ {
		start := at
		for start < len(lower) && !isASCIIWord(lower[start]) {
			start++
		}
		end := start
		for end < len(lower) && isASCIIWord(lower[end]) {
			end++
		}
		if start == end || end-start > MaxTokenBytes || !f.sets[j][string(lower[start:end])] {
			return false
		}
		at = end
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
