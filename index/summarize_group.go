package index

// This file groups the candidate rows of a summarize request: by postings,
// by the codes of a value store, or by values read row by row.

import (
	"context"
	"encoding/binary"
	"errors"
	"math"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
)

// sumGroup is one group: its values, its rows when grouped by bitmaps,
// its accumulators and then its results.
type sumGroup struct {
	vals []codec.Value
	rows *roaring.Bitmap
	accs []summaryAcc
	res  []codec.Value
}

// eachRow calls fn for each row of rows in ascending order, stopping at
// the first error, or with ctx's error when ctx ends.
func eachRow(ctx context.Context, rows *roaring.Bitmap, fn func(row uint32) error) error {
	buf := make([]uint32, foldBatch)
	it := rows.ManyIterator()
	for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, row := range buf[:n] {
			if err := fn(row); err != nil {
				return err
			}
		}
	}
	return nil
}

// groupRows splits the candidates into groups and computes their
// summaries.
func (q *summarizeReq) groupRows(x *valueReaders, cand *roaring.Bitmap) ([]*sumGroup, error) {
	execs, err := q.summaryExecs(x)
	if err != nil {
		return nil, err
	}
	var groups []*sumGroup
	byBitmap := false
	q.grouped = "values"
	switch {
	case len(q.groups) == 0:
		groups, byBitmap = []*sumGroup{{rows: cand}}, true
		q.grouped = ""
	case len(q.groups) == 1 && postingGroupable(q.groups[0]):
		c := q.groups[0].col
		vals, err := x.src.Values(c)
		if err != nil {
			return nil, err
		}
		if cv, ok := vals.(CodedValues); ok && cand.GetCardinality() >= postingMinRows {
			if codes, dict, ok := cv.Codes(); ok {
				q.grouped = "codes"
				return q.groupByCodes(cand, execs, codes, dict)
			}
		}
		if vals != nil && (cand.GetCardinality() < postingMinRows || !fewValues(vals, cand)) {
			break
		}
		parts, ok, err := partitionPostings(x.src, c, cand, maxPostingGroups)
		if err != nil {
			return nil, err
		}
		if ok {
			for _, p := range parts {
				groups = append(groups, &sumGroup{vals: []codec.Value{p.v}, rows: p.rows})
			}
			byBitmap = true
			q.grouped = "postings"
		}
	}
	if byBitmap {
		for _, g := range groups {
			g.accs = make([]summaryAcc, len(execs))
		}
		// Many groups of many rows: label each row with its group, so
		// that a dense column is read in one pass rather than once per
		// group.
		var gid []uint16
		if len(groups) > 1 && cand.GetCardinality() >= postingMinRows {
			gid = labelRows(groups, cand)
		}
		// Every numeric summary of one column comes from one fold.
		folds := map[string]any{}
		for i, e := range execs {
			if gid != nil && e.foldGroups(groups, i, cand, gid, folds) {
				continue
			}
			for _, g := range groups {
				if err := e.addRows(&g.accs[i], g.rows); err != nil {
					return nil, err
				}
			}
		}
	} else if groups, err = q.groupByValues(x, cand, execs); err != nil {
		return nil, err
	}
	finish(groups, execs)
	return groups, nil
}

// finish computes the results of groups from their accumulators.
func finish(groups []*sumGroup, execs []*summaryExec) {
	for _, g := range groups {
		g.res = make([]codec.Value, len(execs))
		for i, e := range execs {
			g.res[i] = e.result(&g.accs[i])
		}
	}
}

// groupByCodes groups the candidates by the codes of the one group
// column's value store: each summary is one pass over the candidates,
// adding each row to the accumulator of its code, in ascending row order.
// Codes without candidates make no group.
func (q *summarizeReq) groupByCodes(cand *roaring.Bitmap, execs []*summaryExec, codes []uint16, dict []codec.Value) ([]*sumGroup, error) {
	ng := len(dict) + 1
	groups := make([]*sumGroup, ng)
	accs := make([]summaryAcc, ng*len(execs))
	for g := range groups {
		v := codec.Null()
		if g > 0 {
			v = dict[g-1]
		}
		groups[g] = &sumGroup{vals: []codec.Value{v}, accs: accs[g*len(execs) : (g+1)*len(execs) : (g+1)*len(execs)]}
	}
	// Rows past the end of codes have no value: code 0.
	gid := codes
	if last := int(cand.Maximum()); last >= len(codes) {
		gid = make([]uint16, last+1)
		copy(gid, codes)
	}
	counts, folds := foldCodes(cand, gid, ng, execs, q.spare)
	for i, e := range execs {
		switch {
		case e.spec.star:
			for g, n := range counts {
				groups[g].accs[i].n = n
			}
		case e.exists != nil:
			for g, n := range countCodes(roaring.And(cand, e.exists), gid, ng) {
				groups[g].accs[i].n = n
			}
		case e.foldGroups(groups, i, cand, gid, folds):
		default:
			err := eachRow(q.ctx, cand, func(row uint32) error { return e.addRow(&groups[gid[row]].accs[i], row) })
			if err != nil {
				return nil, err
			}
		}
	}
	kept := groups[:0]
	for g, grp := range groups {
		if counts[g] > 0 {
			kept = append(kept, grp)
		}
	}
	finish(kept, execs)
	return kept, nil
}

// Sampling decides whether a column has few enough values among the
// candidates to walk its postings: sampleRows rows spread evenly over the
// candidates must show at most sampleValues distinct values.
const (
	sampleRows   = 1024
	sampleValues = 256
)

// fewValues samples the values of cand from a value store: the first
// candidates at or after sampleRows row ids spread evenly from the
// smallest to the largest.
func fewValues(vals ColumnValues, cand *roaring.Bitmap) bool {
	lo, hi := uint64(cand.Minimum()), uint64(cand.Maximum())
	seen := map[string]struct{}{}
	var key []byte
	it := cand.Iterator()
	for k := uint64(0); k < sampleRows && it.HasNext(); k++ {
		it.AdvanceIfNeeded(uint32(lo + k*(hi-lo+1)/sampleRows))
		if !it.HasNext() {
			break
		}
		key = appendValueKey(key[:0], vals.Get(it.Next()))
		seen[string(key)] = struct{}{}
		if len(seen) > sampleValues {
			return false
		}
	}
	return true
}

// postingGroupable reports whether a group column can be grouped by
// walking its postings.
func postingGroupable(p colPath) bool {
	return len(p.links) == 0 && indexed(p.col) && p.col.Type != TypeMultiple && p.col.ID < MetaUpdatedAtColumn
}

// groupByValues groups the candidates by their values, read row by row.
func (q *summarizeReq) groupByValues(x *valueReaders, cand *roaring.Bitmap, execs []*summaryExec) ([]*sumGroup, error) {
	readers := make([]valueReader, len(q.groups))
	for i, g := range q.groups {
		rd, err := x.reader(g)
		if err != nil {
			return nil, err
		}
		readers[i] = rd
	}
	var groups []*sumGroup
	byKey := map[string]*sumGroup{}
	alloc := groupAlloc{nvals: len(readers), naccs: len(execs)}
	vals := make([]codec.Value, len(readers))
	var key []byte
	it := cand.Iterator()
	for n := 0; it.HasNext(); n++ {
		if n%ctxCheckRows == 0 {
			if err := q.ctx.Err(); err != nil {
				return nil, err
			}
		}
		row := it.Next()
		key = key[:0]
		for i, rd := range readers {
			v, err := rd.get(row)
			if err != nil {
				return nil, err
			}
			vals[i] = v
			key = appendValueKey(key, v)
		}
		g := byKey[string(key)]
		if g == nil {
			g = alloc.group(vals)
			byKey[string(key)] = g
			groups = append(groups, g)
		}
		for i, e := range execs {
			if err := e.addRow(&g.accs[i], row); err != nil {
				return nil, err
			}
		}
	}
	return groups, nil
}

// groupAlloc allocates groups, their values and their accumulators in
// chunks: value grouping may make a group for every row.
type groupAlloc struct {
	nvals, naccs int
	groups       []sumGroup
	vals         []codec.Value
	accs         []summaryAcc
}

// groupChunk is how many groups one allocation holds.
const groupChunk = 256

// group returns a new group with a copy of vals and zero accumulators.
func (a *groupAlloc) group(vals []codec.Value) *sumGroup {
	if len(a.groups) == cap(a.groups) {
		a.groups = make([]sumGroup, 0, groupChunk)
		a.vals = make([]codec.Value, 0, groupChunk*a.nvals)
		a.accs = make([]summaryAcc, groupChunk*a.naccs)
	}
	a.groups = append(a.groups, sumGroup{})
	g := &a.groups[len(a.groups)-1]
	start := len(a.vals)
	a.vals = append(a.vals, vals...)
	g.vals = a.vals[start:len(a.vals):len(a.vals)]
	i := len(a.groups) - 1
	g.accs = a.accs[i*a.naccs : (i+1)*a.naccs : (i+1)*a.naccs]
	return g
}

// appendValueKey appends an encoding of v that equal values share and
// unequal ones do not.
func appendValueKey(dst []byte, v codec.Value) []byte {
	dst = append(dst, byte(v.Kind))
	switch v.Kind {
	case codec.KindBool, codec.KindInt, codec.KindDatetime:
		dst = binary.BigEndian.AppendUint64(dst, uint64(v.Int))
	case codec.KindFloat:
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v.Float))
	case codec.KindString:
		dst = binary.AppendUvarint(dst, uint64(len(v.Str)))
		dst = append(dst, v.Str...)
	case codec.KindStrings:
		dst = binary.AppendUvarint(dst, uint64(len(v.Strs)))
		for _, s := range v.Strs {
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		}
	case codec.KindVector:
		dst = binary.AppendUvarint(dst, uint64(len(v.Vec)))
		for _, f := range v.Vec {
			dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(f))
		}
	}
	return dst
}

// valuePart is the rows of cand holding one value of a column.
type valuePart struct {
	v    codec.Value
	rows *roaring.Bitmap
}

// partitionPostings splits cand by the value of an indexed column by
// walking its postings in value order; the rows without a value come last
// as a null part. ok is false, with nothing done, when the column has more
// than limit values.
func partitionPostings(src Source, c *Column, cand *roaring.Bitmap, limit int) ([]valuePart, bool, error) {
	var parts []valuePart
	walked, over := 0, false
	err := src.Scan(c, Bounds{}, false, func(v codec.Value, rows *roaring.Bitmap) bool {
		walked++
		if walked > limit {
			over = true
			return false
		}
		rows.And(cand)
		if !rows.IsEmpty() {
			parts = append(parts, valuePart{v: v, rows: rows})
		}
		return true
	})
	if errors.Is(err, ErrNoOrderedIndex) {
		return nil, false, nil
	}
	if err != nil || over {
		return nil, false, err
	}
	exists, err := src.Exists(c)
	if err != nil {
		return nil, false, err
	}
	if nulls := roaring.AndNot(cand, exists); !nulls.IsEmpty() {
		parts = append(parts, valuePart{v: codec.Null(), rows: nulls})
	}
	return parts, true, nil
}

// valueReader reads one column's value of rows of a source.
type valueReader interface {
	get(row uint32) (codec.Value, error)
}

// valueReaders makes readers for columns of one source, sharing the stored
// record of the row being read among the columns without a value store.
type valueReaders struct {
	ctx  context.Context
	src  Source
	recs map[Source]*recordCache
}

// newValueReaders returns the readers of src's columns. Readers of stored
// records stop with ctx's error once ctx ends.
func newValueReaders(ctx context.Context, src Source) *valueReaders {
	return &valueReaders{ctx: ctx, src: src, recs: map[Source]*recordCache{}}
}

// reader returns a reader of a column path of the source.
func (x *valueReaders) reader(p colPath) (valueReader, error) {
	return x.readerOn(x.src, p.links, p.col)
}

func (x *valueReaders) readerOn(src Source, links []*Column, c *Column) (valueReader, error) {
	if len(links) > 0 {
		idr, err := x.readerOn(src, nil, links[0])
		if err != nil {
			return nil, err
		}
		target, err := src.Linked(links[0])
		if err != nil {
			return nil, err
		}
		inner, err := x.readerOn(target, links[1:], c)
		if err != nil {
			return nil, err
		}
		return &linkReader{ids: idr, target: target, inner: inner, cache: map[string]codec.Value{}}, nil
	}
	vals, err := src.Values(c)
	if err != nil {
		return nil, err
	}
	if vals != nil {
		return storeReader{vals}, nil
	}
	rc := x.recs[src]
	if rc == nil {
		rc = &recordCache{ctx: x.ctx, src: src}
		x.recs[src] = rc
	}
	return &recordReader{rc: rc, col: c}, nil
}

// storeReader reads a value store.
type storeReader struct{ vals ColumnValues }

func (r storeReader) get(row uint32) (codec.Value, error) { return r.vals.Get(row), nil }

// recordCache holds the last stored record read from a source.
type recordCache struct {
	ctx   context.Context
	reads int // records read, for checking ctx
	src   Source
	row   uint32
	have  bool
	ok    bool
	rec   codec.Record
}

func (c *recordCache) load(row uint32) (bool, error) {
	if c.have && c.row == row {
		return c.ok, nil
	}
	c.reads++
	if err := checkContext(c.ctx, c.reads); err != nil {
		return false, err
	}
	ok, err := c.src.Record(row, &c.rec)
	if err != nil {
		c.have = false
		return false, err
	}
	c.row, c.have, c.ok = row, true, ok
	return ok, nil
}

// recordReader reads a column from stored records.
type recordReader struct {
	rc  *recordCache
	col *Column
}

func (r *recordReader) get(row uint32) (codec.Value, error) {
	ok, err := r.rc.load(row)
	if err != nil || !ok {
		return codec.Null(), err
	}
	return recordValue(&r.rc.rec, r.col), nil
}

// linkReader reads a column of the record a link points at, caching by
// target id. A null or dangling link reads as null.
type linkReader struct {
	ids    valueReader
	target Source
	inner  valueReader
	cache  map[string]codec.Value
}

func (r *linkReader) get(row uint32) (codec.Value, error) {
	id, err := r.ids.get(row)
	if err != nil || id.Kind != codec.KindString {
		return codec.Null(), err
	}
	if v, ok := r.cache[id.Str]; ok {
		return v, nil
	}
	rows, err := r.target.Rows([]string{id.Str})
	if err != nil {
		return codec.Null(), err
	}
	v := codec.Null()
	if !rows.IsEmpty() {
		if v, err = r.inner.get(rows.Minimum()); err != nil {
			return codec.Null(), err
		}
	}
	r.cache[id.Str] = v
	return v, nil
}
