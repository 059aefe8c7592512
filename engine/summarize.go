package engine

import (
	"context"
	"time"

	"github.com/coppice-db/coppice/engine/internal/memstore"
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
	src, release, err := e.openSource(ctx, ref, table, memstore.Need{Store: memstore.Required})
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := index.Summarize(ctx, src, in)
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
	src, release, err := e.openSource(ctx, ref, table, memstore.Need{Store: memstore.Required})
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := index.Aggregate(ctx, src, in)
	if err != nil {
		return nil, queryError(err)
	}
	return res, nil
}

// A column store hands summaries and aggregations its arrays
// (index.DenseValues), so that sums, averages, minimums and maximums over
// many rows scan memory. The source holds the store for the whole request:
// it shows the source's snapshot until then.
