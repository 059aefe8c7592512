package fts

import (
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

// top returns the k best rows of matched by score, ties by record id: a
// bounded heap whose root is the worst hit kept. Record ids are read only
// to break ties.
func (x *scorer) top(matched *roaring.Bitmap, k int) ([]RowScore, error) {
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
	// worse orders hits from the worst kept to the best.
	worse := func(a, b RowScore) bool {
		if a.Score != b.Score {
			return a.Score < b.Score
		}
		return idOf(a.Row) > idOf(b.Row)
	}
	h := make([]RowScore, 0, k)
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && worse(h[r], h[l]) {
				m = r
			}
			if !worse(h[m], h[i]) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	consider := func(e RowScore) {
		if len(h) < k {
			h = append(h, e)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if !worse(h[i], h[p]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
			return
		}
		// Most rows lose on the score alone; the id decides ties only.
		if k == 0 || e.Score < h[0].Score || !worse(h[0], e) {
			return
		}
		h[0] = e
		down(0)
	}
	var buf [512]uint32
	many := matched.ManyIterator()
	for n, seen := many.NextMany(buf[:]), 0; n > 0; n = many.NextMany(buf[:]) {
		if seen += n; seen >= ctxCheckRows {
			if err := x.ctx.Err(); err != nil {
				return nil, err
			}
			seen = 0
		}
		for _, row := range buf[:n] {
			if sc := x.total[row]; len(h) < k || k > 0 && sc >= h[0].Score {
				consider(RowScore{row, sc})
			}
		}
	}
	slices.SortFunc(h, func(a, b RowScore) int {
		if worse(b, a) {
			return -1
		}
		if worse(a, b) {
			return 1
		}
		return 0
	})
	return h, nil
}
