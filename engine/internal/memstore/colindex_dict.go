package memstore

import (
	"strings"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

// maxDictValues is the most distinct values a column's dictionary holds;
// it matches the most groups summarize walks by postings.
const maxDictValues = 1024

// colDict codes the values of a string column: codes[row] is 0 for a row
// without a value, else one more than the index of its value in vals.
// Rows past the end of codes have no value.
type colDict struct {
	codes []uint16
	vals  []codec.Value
	byStr map[string]uint16
}

// set records row's new value; false when the value would take the
// dictionary past maxDictValues (it is then left unusable).
func (d *colDict) set(row uint32, v codec.Value) bool {
	if v.IsNull() {
		if int(row) < len(d.codes) {
			d.codes[row] = 0
		}
		return true
	}
	code, ok := d.byStr[v.Str]
	if !ok {
		if len(d.vals) >= maxDictValues {
			return false
		}
		// A copy: the value may be cut from a column's arena, which it
		// would keep alive after the column moves to a new one.
		str := strings.Clone(v.Str)
		d.vals = append(d.vals, codec.String(str))
		code = uint16(len(d.vals))
		d.byStr[str] = code
	}
	d.codes = grow(d.codes, int(row)+1)
	d.codes[row] = code
	return true
}

var _ index.CodedValues = (*Column)(nil)

// Codes returns the dictionary of a string column with at most
// maxDictValues distinct values, building it on first use; ok is false for
// other columns. It implements index.CodedValues.
func (c *Column) Codes() (codes []uint16, vals []codec.Value, ok bool) {
	if c.kind != codec.KindString {
		return nil, nil, false
	}
	ix := &c.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.dict == nil && !ix.noDict {
		d := &colDict{byStr: map[string]uint16{}}
		if !c.present.IsEmpty() {
			d.codes = make([]uint16, c.present.Maximum()+1)
		}
		it := c.present.Iterator()
		for it.HasNext() {
			row := it.Next()
			if !d.set(row, codec.String(c.strs.get(row))) {
				ix.noDict = true
				break
			}
		}
		if !ix.noDict {
			ix.dict = d
			c.indexBuilt()
		}
	}
	if ix.dict == nil {
		return nil, nil, false
	}
	return ix.dict.codes, ix.dict.vals, true
}
