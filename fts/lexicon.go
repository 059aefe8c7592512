package fts

import (
	"cmp"
	"slices"
	"strings"
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
// Dict.Fuzzy orders them, at most limit (<= 0: all). The terms outside the
// automaton are looked up by binary search for an exact match, and run
// through the edit-distance automaton otherwise.
func (l *Lexicon) Fuzzy(term string, maxDist, limit int) []Match {
	var out []Match
	if l.base != nil {
		out = l.base.Fuzzy(term, maxDist, 0)
	}
	if k := Edits(term, maxDist); k == 0 {
		if _, ok := slices.BinarySearch(l.extra, term); ok {
			out = append(out, Match{Term: term})
		}
	} else if len(l.extra) > 0 {
		a := newLevenshtein(term, k)
		for _, t := range l.extra {
			if d := a.distance(t); d <= k {
				out = append(out, Match{Term: t, Dist: d})
			}
		}
		a.free()
	}
	slices.SortFunc(out, func(a, b Match) int {
		return cmp.Or(cmp.Compare(a.Dist, b.Dist), cmp.Compare(a.Term, b.Term))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit:limit]
	}
	return out
}
