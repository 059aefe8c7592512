package fts

import (
	"math"
	"slices"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

// topK keeps the k best rows offered, by score and then record id: a
// bounded heap whose root is the worst hit kept. Record ids are read only
// to break ties, once per row kept or offered.
type topK struct {
	k    int
	h    []topHit
	idOf func(row uint32) string
}

// topHit is a row of the heap, with its record id once read.
type topHit struct {
	RowScore
	id    string
	hasID bool
}

// newTop returns an empty topK of the table's rows. Ids come from the
// table's id values when the source keeps them, else from its records.
func (x *scorer) newTop(k int) (*topK, error) {
	ids, err := x.src.Values(index.IDColumn)
	if err != nil {
		return nil, err
	}
	idOf := func(row uint32) string {
		if ids != nil {
			return ids.Get(row).Str
		}
		var rec codec.Record
		if ok, err := x.src.Record(row, &rec); err == nil && ok {
			return rec.ID
		}
		return ""
	}
	return &topK{k: k, h: make([]topHit, 0, k), idOf: idOf}, nil
}

// id returns the record id of e, reading it on first use.
func (t *topK) id(e *topHit) string {
	if !e.hasID {
		e.id, e.hasID = t.idOf(e.Row), true
	}
	return e.id
}

// worse orders hits from the worst kept to the best.
func (t *topK) worse(a, b *topHit) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return t.id(a) > t.id(b)
}

// offer considers row with its final score.
func (t *topK) offer(row uint32, score float64) {
	if len(t.h) < t.k {
		t.h = append(t.h, topHit{RowScore: RowScore{row, score}})
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !t.worse(&t.h[i], &t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	// Most rows lose on the score alone; the id decides ties only.
	if t.k == 0 || score < t.h[0].Score {
		return
	}
	e := topHit{RowScore: RowScore{row, score}}
	if !t.worse(&t.h[0], &e) {
		return
	}
	t.h[0] = e
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(t.h) {
			return
		}
		m := l
		if r := l + 1; r < len(t.h) && t.worse(&t.h[r], &t.h[l]) {
			m = r
		}
		if !t.worse(&t.h[m], &t.h[i]) {
			return
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// threshold is the score a row must reach to enter the heap (a tie
// entering by its id): the worst kept once the heap is full, -∞ before.
func (t *topK) threshold() float64 {
	if t.k == 0 || len(t.h) < t.k {
		return math.Inf(-1)
	}
	return t.h[0].Score
}

// sorted returns the rows kept, best first.
func (t *topK) sorted() []RowScore {
	slices.SortFunc(t.h, func(a, b topHit) int {
		if t.worse(&b, &a) {
			return -1
		}
		if t.worse(&a, &b) {
			return 1
		}
		return 0
	})
	out := make([]RowScore, len(t.h))
	for i, e := range t.h {
		out[i] = e.RowScore
	}
	return out
}
