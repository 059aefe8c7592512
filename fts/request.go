package fts

// This file reads the parts of a search request that the API hands the
// engine as Go values: the target list and the boosters (spec §4.1.3). It
// checks their JSON; binding them to a table (columns, types, filters)
// happens when a table is searched.

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/coppice-db/coppice/index"
)

// Target is one entry of a search's target list: a column searched and
// its weight. Column is a column path (an object stands for its text
// columns) or "*", every text column not listed otherwise, at weight 1.
// Weight lies in 1..10; 0 means 1.
type Target struct {
	Column string
	Weight float64
}

// ReadTarget reads a TargetExpression: column names or {column, weight}
// objects. Absent or null is nil; nil or an empty list searches every
// text column. Errors are *index.InputError.
func ReadTarget(raw []byte) ([]Target, error) {
	if index.IsNullJSON(raw) {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalidf("target must be an array of column names or {column, weight} objects")
	}
	out := make([]Target, 0, len(items))
	for _, it := range items {
		t := Target{Weight: 1}
		if trimmed := bytes.TrimSpace(it); len(trimmed) > 0 && trimmed[0] == '{' {
			var obj struct {
				Column *string  `json:"column"`
				Weight *float64 `json:"weight"`
			}
			dec := json.NewDecoder(bytes.NewReader(it))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&obj); err != nil {
				return nil, invalidf("target: invalid entry %s: %v", it, err)
			}
			if obj.Column == nil {
				return nil, invalidf("target: an object entry needs a column")
			}
			t.Column = *obj.Column
			if obj.Weight != nil {
				if err := checkWeight(t.Column, *obj.Weight); err != nil {
					return nil, err
				}
				t.Weight = *obj.Weight
			}
		} else if err := json.Unmarshal(it, &t.Column); err != nil {
			return nil, invalidf("target: entries must be column names or {column, weight} objects")
		}
		out = append(out, t)
	}
	return out, nil
}

// checkWeight rejects a target weight outside 1..10.
func checkWeight(column string, w float64) error {
	if w < 1 || w > 10 {
		return invalidf("target: weight of column [%s] must be between 1 and 10, got %v", column, w)
	}
	return nil
}

// Booster is one BoosterExpression of a search: exactly one of its fields
// is set.
type Booster struct {
	ValueBooster   *ValueBooster
	NumericBooster *NumericBooster
	DateBooster    *DateBooster
}

// ValueBooster adds Factor to the score of records whose column equals
// Value (for a multiple column: contains it). Value is a value as JSON
// decodes it (numbers as json.Number) or a Go value; nil is missing.
type ValueBooster struct {
	Column          string
	Value           any
	Factor          *float64
	IfMatchesFilter index.Filter
}

// NumericBooster adds Modifier(Factor · value of Column) to the score.
// Modifier is a wire name of ParseModifier; "" is none.
type NumericBooster struct {
	Column          string
	Factor          *float64
	Modifier        string
	IfMatchesFilter index.Filter
}

// DateBooster adds Factor · Decay^(|date − Origin| / Scale) to the score
// (see NewDateDecay).
type DateBooster struct {
	Column          string
	Origin          string
	Scale           string
	Decay           *float64
	Factor          *float64
	IfMatchesFilter index.Filter
}

// boosterJSON is one BoosterExpression on the wire.
type boosterJSON struct {
	ValueBooster *struct {
		Column          string          `json:"column"`
		Value           json.RawMessage `json:"value"`
		Factor          *float64        `json:"factor"`
		IfMatchesFilter json.RawMessage `json:"ifMatchesFilter"`
	} `json:"valueBooster"`
	NumericBooster *struct {
		Column          string          `json:"column"`
		Factor          *float64        `json:"factor"`
		Modifier        string          `json:"modifier"`
		IfMatchesFilter json.RawMessage `json:"ifMatchesFilter"`
	} `json:"numericBooster"`
	DateBooster *struct {
		Column          string          `json:"column"`
		Origin          string          `json:"origin"`
		Scale           string          `json:"scale"`
		Decay           *float64        `json:"decay"`
		Factor          *float64        `json:"factor"`
		IfMatchesFilter json.RawMessage `json:"ifMatchesFilter"`
	} `json:"dateBooster"`
}

// ReadBoosters reads the boosters of a search: an array of booster
// objects, each with exactly one of valueBooster, numericBooster and
// dateBooster. Absent or null is none. Errors are *index.InputError.
func ReadBoosters(raw []byte) ([]Booster, error) {
	if index.IsNullJSON(raw) {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, invalidf("boosters must be an array of booster objects")
	}
	out := make([]Booster, 0, len(list))
	for _, item := range list {
		var bj boosterJSON
		dec := json.NewDecoder(bytes.NewReader(item))
		dec.DisallowUnknownFields()
		dec.UseNumber()
		if err := dec.Decode(&bj); err != nil {
			return nil, invalidf("boosters: invalid booster %s: %v", item, err)
		}
		kinds := 0
		for _, set := range []bool{bj.ValueBooster != nil, bj.NumericBooster != nil, bj.DateBooster != nil} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			return nil, invalidf("boosters: each booster needs exactly one of valueBooster, numericBooster and dateBooster")
		}
		var b Booster
		var cond json.RawMessage
		switch {
		case bj.ValueBooster != nil:
			vb := bj.ValueBooster
			b.ValueBooster = &ValueBooster{Column: vb.Column, Factor: vb.Factor}
			if !index.IsNullJSON(vb.Value) {
				dec := json.NewDecoder(bytes.NewReader(vb.Value))
				dec.UseNumber()
				if err := dec.Decode(&b.ValueBooster.Value); err != nil {
					return nil, invalidf("boosters: invalid booster %s: %v", item, err)
				}
			}
			cond = vb.IfMatchesFilter
		case bj.NumericBooster != nil:
			nb := bj.NumericBooster
			b.NumericBooster = &NumericBooster{Column: nb.Column, Factor: nb.Factor, Modifier: nb.Modifier}
			cond = nb.IfMatchesFilter
		case bj.DateBooster != nil:
			db := bj.DateBooster
			b.DateBooster = &DateBooster{Column: db.Column, Origin: db.Origin, Scale: db.Scale, Decay: db.Decay, Factor: db.Factor}
			cond = db.IfMatchesFilter
		}
		f, err := index.ReadFilter(cond)
		if err != nil {
			return nil, invalidf("ifMatchesFilter: %v", err)
		}
		switch {
		case b.ValueBooster != nil:
			b.ValueBooster.IfMatchesFilter = f
		case b.NumericBooster != nil:
			b.NumericBooster.IfMatchesFilter = f
		default:
			b.DateBooster.IfMatchesFilter = f
		}
		out = append(out, b)
	}
	return out, nil
}

// invalidf makes an *index.InputError: bad input, answered with 400.
func invalidf(format string, args ...any) error {
	return &index.InputError{Message: fmt.Sprintf(format, args...)}
}
