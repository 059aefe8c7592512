package engine

import (
	"encoding/json"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

// SummarizeInput is a summarize request as the client sent it; it is the
// index package's, named here so that callers of the engine need not
// import it.
type SummarizeInput = index.SummarizeInput

// Summarize groups and summarizes the records of a table of a branch (spec
// §4.1.2): the output rows in order, each a map of group values (nested for
// object and link paths) and summary values, with the types
// index.Summarize documents. meta is the record metadata key ("svc" when
// empty).
func (e *Engine) Summarize(ref Ref, table string, in index.SummarizeInput, meta string) ([]map[string]any, error) {
	if meta == "" {
		meta = "svc"
	}
	src, release, err := e.openSource(ref, table, storeRequired)
	if err != nil {
		return nil, err
	}
	defer release()
	rows, err := index.Summarize(src, in, meta)
	if err != nil {
		return nil, queryError(err)
	}
	return rows, nil
}

// Aggregate runs the aggregations of the compat API (compat-api §8) on a
// table of a branch: the response body {"aggs": {...}}. filter and aggs
// are the raw JSON of the request's fields (absent: nil); meta is the
// record metadata key ("svc" when empty).
func (e *Engine) Aggregate(ref Ref, table string, filter, aggs json.RawMessage, meta string) (map[string]any, error) {
	if meta == "" {
		meta = "svc"
	}
	src, release, err := e.openSource(ref, table, storeRequired)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := index.Aggregate(src, filter, aggs, meta)
	if err != nil {
		return nil, queryError(err)
	}
	return res, nil
}

// A column store hands summaries and aggregations its arrays
// (index.DenseValues), so that sums, averages, minimums and maximums over
// many rows scan memory. Like Get, these are read under the database's
// store lock, which the Source holds for the whole request.

var _ index.DenseValues = (*colValues)(nil)

// Present returns the rows that hold a value.
func (c *colValues) Present() *roaring.Bitmap { return &c.present }

// Ints returns the values of an int, datetime or bool column by row.
func (c *colValues) Ints() []int64 {
	switch c.kind {
	case codec.KindInt, codec.KindDatetime, codec.KindBool:
		return c.ints
	}
	return nil
}

// Floats returns the values of a float column by row.
func (c *colValues) Floats() []float64 {
	if c.kind == codec.KindFloat {
		return c.floats
	}
	return nil
}

// Strings returns the values of a string, email or link column by row.
func (c *colValues) Strings() []string {
	if c.kind == codec.KindString {
		return c.strs
	}
	return nil
}
