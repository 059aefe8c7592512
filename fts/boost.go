package fts

// This file binds the boosters of a search to a table and adds them to
// the text scores of the matched rows.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

// boosterSet holds the bound boosters of one table search.
type boosterSet []booster

// booster adds to the score of the rows it applies to.
type booster struct {
	applies *roaring.Bitmap // nil: every row
	// one of:
	equal   *roaring.Bitmap // valueBooster: rows holding the value
	factor  float64
	numeric *index.Column // numericBooster
	mod     Modifier
	date    *index.Column // dateBooster
	decay   DateDecay
}

// bindBoosters binds the boosters of a table search to its source: their
// columns, value filters and ifMatchesFilter rows, whose matching stops
// with ctx's error once ctx ends. now is the origin of date boosters
// without one.
func bindBoosters(ctx context.Context, src Source, list []Booster, now time.Time) (boosterSet, error) {
	var out boosterSet
	for _, bj := range list {
		var b booster
		var cond index.Filter
		switch {
		case bj.ValueBooster != nil:
			vb := bj.ValueBooster
			col, err := boosterColumn(src.Table(), vb.Column, "valueBooster")
			if err != nil {
				return nil, err
			}
			if vb.Factor == nil {
				return nil, invalidf("valueBooster: factor is required")
			}
			if vb.Value == nil {
				return nil, invalidf("valueBooster: value is required")
			}
			filter := index.FilterOf(map[string]any{col.Path: vb.Value})
			if col.Type == index.TypeMultiple {
				filter = index.FilterOf(map[string]any{col.Path: map[string]any{"$includes": vb.Value}})
			}
			eq, err := index.Matching(ctx, src, filter)
			if err != nil {
				return nil, wrapInput("valueBooster", err)
			}
			b.equal, b.factor, cond = eq, *vb.Factor, vb.IfMatchesFilter
		case bj.NumericBooster != nil:
			nb := bj.NumericBooster
			col, err := boosterColumn(src.Table(), nb.Column, "numericBooster")
			if err != nil {
				return nil, err
			}
			if col.Type != index.TypeInt && col.Type != index.TypeFloat {
				return nil, invalidf("numericBooster: column [%s] is not an int or float column", nb.Column)
			}
			if nb.Factor == nil {
				return nil, invalidf("numericBooster: factor is required")
			}
			mod, err := ParseModifier(nb.Modifier)
			if err != nil {
				return nil, invalidf("numericBooster: %v", err)
			}
			b.numeric, b.factor, b.mod, cond = col, *nb.Factor, mod, nb.IfMatchesFilter
		case bj.DateBooster != nil:
			db := bj.DateBooster
			col, err := boosterColumn(src.Table(), db.Column, "dateBooster")
			if err != nil {
				return nil, err
			}
			if col.Type != index.TypeDatetime {
				return nil, invalidf("dateBooster: column [%s] is not a datetime column", db.Column)
			}
			if db.Decay == nil {
				return nil, invalidf("dateBooster: decay is required")
			}
			dec, err := NewDateDecay(db.Origin, db.Scale, *db.Decay, db.Factor, now)
			if err != nil {
				return nil, invalidf("%v", err)
			}
			b.date, b.decay, cond = col, dec, db.IfMatchesFilter
		default:
			return nil, invalidf("boosters: each booster needs exactly one of valueBooster, numericBooster and dateBooster")
		}
		if !cond.IsZero() {
			rows, err := index.Matching(ctx, src, cond)
			if err != nil {
				return nil, wrapInput("ifMatchesFilter", err)
			}
			b.applies = rows
		}
		out = append(out, b)
	}
	return out, nil
}

// wrapInput names the part of a request an input error is about; other
// errors pass unchanged.
func wrapInput(what string, err error) error {
	if ie, ok := err.(*index.InputError); ok {
		return invalidf("%s: %s", what, ie.Message)
	}
	return err
}

// boosterColumn resolves a booster's column: a column of t or a metadata
// date (<t.Meta>.createdAt, <t.Meta>.updatedAt).
func boosterColumn(t *index.Table, name, what string) (*index.Column, error) {
	if name == "" {
		return nil, invalidf("%s: column is required", what)
	}
	if c := t.Columns[name]; c != nil && c.ID != 0 {
		return c, nil
	}
	switch name {
	case t.Meta + ".createdAt":
		return index.CreatedAtColumn, nil
	case t.Meta + ".updatedAt":
		return index.UpdatedAtColumn, nil
	}
	return nil, invalidf("%s: column [%s] not found", what, name)
}

// apply adds every booster to the scores of the matched rows.
func (bs boosterSet) apply(ctx context.Context, src Source, matched *roaring.Bitmap, scores []float64) error {
	for _, b := range bs {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows := matched
		if b.applies != nil {
			rows = roaring.And(matched, b.applies)
		}
		switch {
		case b.equal != nil:
			it := roaring.And(rows, b.equal).Iterator()
			for it.HasNext() {
				row := it.Next()
				scores[row] += ValueBoost(b.factor, true, true)
			}
		case b.numeric != nil || b.date != nil:
			col := b.numeric
			if col == nil {
				col = b.date
			}
			vals, err := src.Values(col)
			if err != nil {
				return err
			}
			if vals == nil {
				return fmt.Errorf("fts: no column values for booster column %s", col.Path)
			}
			it := rows.Iterator()
			for it.HasNext() {
				row := it.Next()
				v := vals.Get(row)
				if v.IsNull() {
					continue
				}
				if b.numeric != nil {
					f := v.Float
					if v.Kind == codec.KindInt {
						f = float64(v.Int)
					}
					scores[row] += NumericBoost(b.factor, b.mod, f, true, true)
				} else {
					scores[row] += b.decay.Boost(time.Unix(0, v.Int).UTC(), true, true)
				}
			}
		}
	}
	return nil
}

// boostRange bounds what the boosters add to a row together: at least
// lo, at most hi; infinite when that cannot be told.
type boostRange struct{ lo, hi float64 }

// bounds returns what the boosters can add to a row: a valueBooster its
// factor or nothing, a dateBooster between nothing and its factor, a
// numericBooster its modifier at either end of the column's values or
// nothing (each modifier is monotone or, for the square, convex; the
// logarithms fall without bound towards the edge of their domain, and the
// reciprocal on both sides of 0).
func (bs boosterSet) bounds(src Source) (boostRange, error) {
	var r boostRange
	unbounded := boostRange{math.Inf(-1), math.Inf(1)}
	for _, b := range bs {
		switch {
		case b.equal != nil:
			f := ValueBoost(b.factor, true, true)
			r.lo, r.hi = r.lo+min(0, f), r.hi+max(0, f)
		case b.date != nil:
			r.hi += max(0, b.decay.Factor)
		case b.numeric != nil:
			lo, hi, ok, err := valueRange(src, b.numeric)
			if errors.Is(err, index.ErrNoOrderedIndex) {
				return unbounded, nil
			}
			if err != nil {
				return boostRange{}, err
			}
			if !ok {
				continue // no values: no boost
			}
			xlo, xhi := min(b.factor*lo, b.factor*hi), max(b.factor*lo, b.factor*hi)
			switch {
			case b.mod == ModReciprocal && xlo <= 0 && xhi >= 0,
				(b.mod == ModLog || b.mod == ModLn) && xlo <= 0,
				(b.mod == ModLog1p || b.mod == ModLn1p) && xlo <= -1:
				return unbounded, nil
			}
			v, w := finite(b.mod.Apply(xlo)), finite(b.mod.Apply(xhi))
			r.lo, r.hi = r.lo+min(0, v, w), r.hi+max(0, v, w)
		}
	}
	return r, nil
}

// valueRange returns the least and the greatest value of a numeric column
// over the table's rows, from the ends of its ordered index; ok is false
// when no row has a value.
func valueRange(src Source, c *index.Column) (lo, hi float64, ok bool, err error) {
	for _, desc := range []bool{false, true} {
		var v float64
		found := false
		err := src.Scan(c, index.Bounds{}, desc, func(val codec.Value, _ *roaring.Bitmap) bool {
			v, found = val.Float, true
			if val.Kind == codec.KindInt {
				v = float64(val.Int)
			}
			return false
		})
		if err != nil || !found {
			return 0, 0, false, err
		}
		if desc {
			hi = v
		} else {
			lo = v
		}
	}
	return lo, hi, true, nil
}
