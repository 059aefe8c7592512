package fts

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/blevesearch/vellum"
)

// MaxEdits is the largest edit distance Fuzzy looks up.
const MaxEdits = 2

// Match is one dictionary term found by a lookup.
type Match struct {
	Term string
	// ID is the term's rank in the dictionary's sorted term list.
	ID uint64
	// Dist is the edit distance from the looked-up term: 0 for an exact
	// match and for a prefix completion.
	Dist int
}

// Dict is an immutable term dictionary: a finite state transducer mapping
// each term to its id (its rank in sorted order), walked by prefix ranges and
// by Levenshtein automata so that a lookup visits only the states that can
// still match instead of every term. It is safe for concurrent use.
type Dict struct {
	fst *vellum.FST
}

// NewDict builds a dictionary from terms in strictly increasing byte order;
// term i gets id i. It fails on unsorted or repeated terms.
func NewDict(sorted []string) (*Dict, error) {
	var buf bytes.Buffer
	b, err := vellum.New(&buf, nil)
	if err != nil {
		return nil, err
	}
	for i, t := range sorted {
		if i > 0 && sorted[i-1] >= t {
			return nil, fmt.Errorf("fts: dictionary terms out of order at %d: %q after %q", i, t, sorted[i-1])
		}
		if err := b.Insert([]byte(t), uint64(i)); err != nil {
			return nil, err
		}
	}
	if err := b.Close(); err != nil {
		return nil, err
	}
	fst, err := vellum.Load(buf.Bytes())
	if err != nil {
		return nil, err
	}
	return &Dict{fst: fst}, nil
}

// BuildDict builds a dictionary from terms in any order, repeats allowed. It
// does not modify terms.
func BuildDict(terms []string) (*Dict, error) {
	sorted := slices.Clone(terms)
	slices.Sort(sorted)
	return NewDict(slices.Compact(sorted))
}

// Len returns the number of terms.
func (d *Dict) Len() int { return d.fst.Len() }

// Exact returns the id of term, if the dictionary holds it.
func (d *Dict) Exact(term string) (id uint64, ok bool) {
	id, ok, err := d.fst.Get([]byte(term))
	if err != nil {
		return 0, false
	}
	return id, ok
}

// Prefix returns the terms that start with p, in byte order, so p itself
// comes first when present. At most limit terms are returned; limit <= 0
// means no limit. The walk stops at the limit: a short prefix over a large
// dictionary costs no more than limit terms.
func (d *Dict) Prefix(p string, limit int) []Match {
	start := []byte(p)
	it, err := d.fst.Iterator(start, prefixEnd(start))
	var out []Match
	for err == nil {
		k, v := it.Current()
		out = append(out, Match{Term: string(k), ID: v})
		if limit > 0 && len(out) >= limit {
			break
		}
		err = it.Next()
	}
	return out
}

// prefixEnd returns the smallest key greater than every key that starts with
// p, or nil when there is none (p is empty or all 0xff).
func prefixEnd(p []byte) []byte {
	end := slices.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Edits returns the edit distance a query term may be matched with under
// fuzziness f: terms of at most two characters match exactly only (a typo
// in a two-letter word makes most other short words match), others up to
// f, capped at MaxEdits.
func Edits(term string, f int) int {
	if utf8.RuneCountInString(term) <= 2 || f <= 0 {
		return 0
	}
	return min(f, MaxEdits)
}

// Fuzzy returns the terms within Levenshtein distance Edits(term, maxDist)
// of term, counting characters (not bytes) and counting a transposition of
// two adjacent characters as one edit. Matches are ordered exact first, then
// by distance, then by term; at most limit are returned (limit <= 0 means no
// limit). The walk visits only the paths of the dictionary that can still
// come within the distance, computing the distance as it goes (see
// levenshtein): nothing is built per query word.
func (d *Dict) Fuzzy(term string, maxDist, limit int) []Match {
	k := Edits(term, maxDist)
	if k == 0 {
		return d.exactMatch(term)
	}
	a := newLevenshtein(term, k)
	defer a.free()
	var out []Match
	it, err := d.fst.Search(a, nil, nil)
	for err == nil {
		key, v := it.Current()
		out = append(out, Match{Term: string(key), ID: v})
		err = it.Next()
	}
	for i := range out {
		out[i].Dist = a.distance(out[i].Term)
	}
	slices.SortFunc(out, func(a, b Match) int {
		return cmp.Or(cmp.Compare(a.Dist, b.Dist), cmp.Compare(a.Term, b.Term))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit:limit]
	}
	return out
}

func (d *Dict) exactMatch(term string) []Match {
	if id, ok := d.Exact(term); ok {
		return []Match{{Term: term, ID: id}}
	}
	return nil
}
