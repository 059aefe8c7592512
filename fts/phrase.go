package fts

import (
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
