package fts

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"
)

// A Lexicon is a Dict plus the terms added since it was built, kept as a
// short sorted list: writes add terms without rebuilding the automaton, and
// a lookup answers over both. It is immutable; With returns an extended
// copy, and Compact folds the list into a new Dict when it grows.
type Lexicon struct {
	base  *Dict
	extra []string // sorted, none of them in base
}

// NewLexicon returns a lexicon of the terms of base (nil for none).
func NewLexicon(base *Dict) *Lexicon { return &Lexicon{base: base} }

// Len is the number of terms.
func (l *Lexicon) Len() int {
	n := len(l.extra)
	if l.base != nil {
		n += l.base.Len()
	}
	return n
}

// Pending is how many terms sit outside the automaton.
func (l *Lexicon) Pending() int { return len(l.extra) }

// Has reports whether the lexicon holds term.
func (l *Lexicon) Has(term string) bool {
	if l.base != nil {
		if _, ok := l.base.Exact(term); ok {
			return true
		}
	}
	_, ok := slices.BinarySearch(l.extra, term)
	return ok
}

// With returns the lexicon extended by terms (any order, repeats and known
// terms allowed). It returns l itself when nothing is new.
func (l *Lexicon) With(terms []string) *Lexicon {
	var fresh []string
	for _, t := range terms {
		if !l.Has(t) {
			fresh = append(fresh, t)
		}
	}
	if len(fresh) == 0 {
		return l
	}
	slices.Sort(fresh)
	extra := make([]string, 0, len(l.extra)+len(fresh))
	extra = append(extra, l.extra...)
	extra = append(extra, fresh...)
	slices.Sort(extra)
	return &Lexicon{base: l.base, extra: slices.Compact(extra)}
}

// Compact returns a lexicon with every term in one Dict.
func (l *Lexicon) Compact() (*Lexicon, error) {
	if len(l.extra) == 0 && l.base != nil {
		return l, nil
	}
	all := make([]string, 0, l.Len())
	if l.base != nil {
		it, err := l.base.fst.Iterator(nil, nil)
		for err == nil {
			k, _ := it.Current()
			all = append(all, string(k))
			err = it.Next()
		}
	}
	all = append(all, l.extra...)
	slices.Sort(all)
	d, err := NewDict(slices.Compact(all))
	if err != nil {
		return nil, err
	}
	return &Lexicon{base: d}, nil
}

// Prefix returns up to limit terms starting with p (limit <= 0: all), in
// byte order.
func (l *Lexicon) Prefix(p string, limit int) []Match {
	var out []Match
	if l.base != nil {
		out = l.base.Prefix(p, limit)
	}
	fromBase := len(out)
	i, _ := slices.BinarySearch(l.extra, p)
	for ; i < len(l.extra) && strings.HasPrefix(l.extra[i], p); i++ {
		out = append(out, Match{Term: l.extra[i]})
	}
	if fromBase > 0 && len(out) > fromBase {
		slices.SortFunc(out, func(a, b Match) int { return strings.Compare(a.Term, b.Term) })
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit:limit]
	}
	return out
}

// Fuzzy returns the terms within Edits(term, maxDist) of term, as
// Dict.Fuzzy orders them, at most limit (<= 0: all).
func (l *Lexicon) Fuzzy(term string, maxDist, limit int) []Match {
	var out []Match
	if l.base != nil {
		out = l.base.Fuzzy(term, maxDist, 0)
	}
	k := Edits(term, maxDist)
	for _, t := range l.extra {
		if d := EditDistance(term, t, k); d <= k {
			out = append(out, Match{Term: t, Dist: d})
		}
	}
	slices.SortFunc(out, func(a, b Match) int {
		return cmp.Or(cmp.Compare(a.Dist, b.Dist), cmp.Compare(a.Term, b.Term))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit:limit]
	}
	return out
}

// EditDistance is the Levenshtein distance between a and b in characters,
// a transposition of two adjacent characters counting as one edit (optimal
// string alignment), as Fuzzy counts. Past max it returns max+1.
func EditDistance(a, b string, max int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > max || -d > max {
		return max + 1
	}
	if utf8.RuneCountInString(a) == 0 || len(rb) == 0 {
		return len(ra) + len(rb)
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		low := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			low = min(low, v)
		}
		if low > max {
			return max + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(rb)], max+1)
}
