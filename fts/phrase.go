package fts

import (
	"bytes"
	"cmp"
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

// phraseCheck tells which records hold the query as a phrase: in some
// searched column, the query words in a row, in order, the last one
// possibly as a prefix.
type phraseCheck struct {
	x      *scorer
	filter *phraseFilter
}

// newPhraseCheck returns the check of the query's phrase.
func (x *scorer) newPhraseCheck() *phraseCheck {
	sets := make([]map[string]bool, len(x.words))
	for i, exps := range x.words {
		sets[i] = map[string]bool{}
		for _, ex := range exps {
			sets[i][ex.term] = true
		}
	}
	f := x.phraseFilter()
	f.sets = sets
	return &phraseCheck{x: x, filter: f}
}

// holds reports whether rec holds the phrase.
func (c *phraseCheck) holds(rec *codec.Record) bool {
	for _, tc := range c.x.targets {
		v, has := rec.Get(tc.col.ID)
		if !has {
			continue
		}
		if v.Kind == codec.KindStrings {
			if slices.ContainsFunc(v.Strs, c.filter.holds) {
				return true
			}
		} else if c.filter.holds(v.Str) {
			return true
		}
	}
	return false
}

// add reads the records of rows, in ascending order, and adds to out
// those that hold the phrase.
func (c *phraseCheck) add(rows []uint32, out *roaring.Bitmap) error {
	if err := c.x.ctx.Err(); err != nil {
		return err
	}
	return c.x.src.Records(rows, func(i int, rec *codec.Record) error {
		if c.holds(rec) {
			out.Add(rows[i])
		}
		return nil
	})
}

// verifyPhrase returns the rows of rows that hold the phrase. The rows
// are read in ascending batches, one pass forward over the records rather
// than a point read each. With stop > 0 it stops once it found stop rows,
// and returns the rows it did not check as well (nil when none).
func (x *scorer) verifyPhrase(c *phraseCheck, rows *roaring.Bitmap, stop uint64) (held, unchecked *roaring.Bitmap, err error) {
	held = roaring.New()
	var arr [phraseBatch]uint32
	buf := arr[:]
	if stop > 0 && stop < phraseBatch {
		buf = arr[:max(stop, 16)] // no need to read much more than stop
	}
	it := rows.ManyIterator()
	for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
		if err := c.add(buf[:n], held); err != nil {
			return nil, nil, err
		}
		if last := buf[n-1]; stop > 0 && held.GetCardinality() >= stop && last < rows.Maximum() {
			unchecked = rows.Clone()
			unchecked.RemoveRange(0, uint64(last)+1)
			return held, unchecked, nil
		}
	}
	return held, nil, nil
}

// scoreUnchecked offers to top the rows that hold the phrase when the
// phrase check stopped early: held, the rows found holding it, and those
// of unchecked that do. Every row is scored; the unchecked ones are
// checked best first, and only while they may still enter the k best.
func (x *scorer) scoreUnchecked(c *phraseCheck, held, unchecked *roaring.Bitmap, boosters boosterSet, top *topK) error {
	all := roaring.Or(held, unchecked)
	x.touched = all // before scoring: free clears what a failure leaves
	if err := x.addText(all); err != nil {
		return err
	}
	if err := boosters.apply(x.ctx, x.src, all, x.s.total); err != nil {
		return err
	}
	total := x.s.total
	it := held.Iterator()
	for it.HasNext() {
		row := it.Next()
		top.offer(row, total[row])
	}
	rest := unchecked.ToArray()
	slices.SortFunc(rest, func(a, b uint32) int { return cmp.Compare(total[b], total[a]) })
	found := roaring.New()
	batch := make([]uint32, 0, max(top.k, 64))
	for len(rest) > 0 {
		// A row scoring below the kth best kept cannot enter.
		th := top.threshold()
		batch = batch[:0]
		for len(rest) > 0 && len(batch) < cap(batch) && total[rest[0]] >= th {
			batch, rest = append(batch, rest[0]), rest[1:]
		}
		if len(batch) == 0 {
			break
		}
		slices.Sort(batch)
		found.Clear()
		if err := c.add(batch, found); err != nil {
			return err
		}
		it := found.Iterator()
		for it.HasNext() {
			row := it.Next()
			top.offer(row, total[row])
		}
	}
	return nil
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
