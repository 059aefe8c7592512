package engine

import (
	"context"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

// Summarize groups and summarizes the records of a table of a branch
// (spec §4.1.2): the groups in order, with the values index.SummaryRow
// documents. It stops with ctx's error when ctx ends.
//
// With in.Explain, the result's Plan has rows and times, the root's time
// the whole request's, the wait for the table's column store included.
func (e *Engine) Summarize(ctx context.Context, ref Ref, table string, in SummarizeRequest) (*SummarizeResult, error) {
	var start time.Time
	if in.Explain {
		start = time.Now()
	}
	src, release, err := e.openSource(ctx, ref, table, storeRequired)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := index.Summarize(ctx, src, in, e.opts.Meta)
	if err != nil {
		return nil, queryError(err)
	}
	if in.Explain {
		res.Plan.Tree().Time = time.Since(start)
	}
	return res, nil
}

// Aggregate runs the aggregations of the compat API (compat-api §8) on a
// table of a branch, with the results index.AggResult documents. It stops
// with ctx's error when ctx ends.
func (e *Engine) Aggregate(ctx context.Context, ref Ref, table string, in AggregateRequest) (*AggregateResult, error) {
	src, release, err := e.openSource(ctx, ref, table, storeRequired)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := index.Aggregate(ctx, src, in, e.opts.Meta)
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
