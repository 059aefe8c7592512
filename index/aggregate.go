package index

// This file implements aggregate (compat-api §8): metrics (count, sum, min,
// max, average, percentiles, uniqueCount) and buckets (dateHistogram,
// topValues, numericHistogram) with sub-aggregations at any depth.
//
// Every aggregation works on a bitmap of rows: the top-level filter's rows,
// or a bucket's. Metrics read the column's values of those rows from the
// value store (or stored records); a count is a cardinality. topValues
// splits its rows by walking the column's postings when the column has an
// ordered index and few values, else by reading values; histograms read
// values and compute each row's bucket. Records whose bucketing or metric
// column is null are skipped.
//
// Choices where the compat document leaves room:
//
//   - A fixed dateHistogram interval is aligned to multiples of the
//     interval from the Unix epoch in the requested timezone (so "1d" with
//     +02:00 starts buckets at local midnight), like calendar intervals.
//   - topValues ties are ordered by value ascending: numbers numerically,
//     strings bytewise, false before true.
//   - uniqueCount is exact; on a multiple column it counts distinct
//     elements.
//   - A histogram of more than maxHistogramBuckets buckets (from the first
//     to the last non-empty one) is an error.
//   - Numbers: counts are int64; sum, min and max of an int column int64,
//     of a float column float64; averages, percentiles and histogram keys
//     float64.

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
)

// aggErrorf makes an *InputError about an aggregation request.
func aggErrorf(format string, args ...any) error { return inputErrorf(format, args...) }

// Limits of aggregate parameters (compat-api §8.1).
const (
	defaultTopValuesSize  = 10
	maxTopValuesSize      = 1000
	maxPrecisionThreshold = 40000
	// maxHistogramBuckets bounds the buckets of one histogram.
	maxHistogramBuckets = 65536
)

// aggNode is one parsed aggregation.
type aggNode struct {
	name string // path of names from the top, for messages
	key  string // the name in its aggs object
	kind string
	col  *Column
	// count: an extra filter (nil: none).
	filter Node
	// percentiles.
	percentiles []float64
	// dateHistogram: a fixed interval in nanoseconds, or a calendar unit;
	// the timezone's offset in seconds east of UTC.
	fixed    int64
	calendar string
	offset   int
	loc      *time.Location
	// topValues.
	size int
	// numericHistogram.
	interval, numOffset float64
	sub                 []*aggNode
}

// AggregateRequest is an aggregate request (compat-api §8): the rows of
// Filter, aggregated as Aggs says (read with ReadFilter and ReadAggs, or
// built from Go values). The zero Aggs asks for the count of rows.
type AggregateRequest struct {
	Filter Filter
	Aggs   Aggs
}

// AggregateResult is the answer of an aggregate request: the results of
// the top-level aggregations, in name order. Without aggregations it is
// one "count" of the rows.
type AggregateResult struct {
	Aggs []AggResult
	// Plan is how the rows were found and what was computed on them.
	Plan AggregatePlan
}

// AggResult is the result of one aggregation.
type AggResult struct {
	// Name is the aggregation's key in its aggs object; Kind is its kind
	// (count, sum, min, max, average, percentiles, uniqueCount,
	// dateHistogram, topValues or numericHistogram).
	Name, Kind string
	// Value is a metric's result: int64 for count and uniqueCount and for
	// sum, min and max of int columns, else float64; nil for the min, max
	// or average of no values.
	Value any
	// Percentiles are the results of percentiles, in the order asked.
	Percentiles []PercentileResult
	// Buckets are the buckets of dateHistogram, topValues and
	// numericHistogram, in order.
	Buckets []AggBucket
}

// PercentileResult is one percentile: the percent asked for and the value
// (float64), nil when there are no values.
type PercentileResult struct {
	Percent float64
	Value   any
}

// AggBucket is one bucket: its key, how many rows it holds and its
// sub-aggregations. The key of topValues is the value as a string
// (numbers and booleans as their JSON text), of dateHistogram the
// bucket's start as a time.Time in the requested timezone, and of
// numericHistogram the bucket's start as a float64.
type AggBucket struct {
	Key   any
	Count int64
	Aggs  []AggResult
}

// Aggregate runs an aggregation request on src. Invalid requests fail
// with *InputError; it stops with ctx's error when ctx ends.
func Aggregate(ctx context.Context, src Source, in AggregateRequest) (*AggregateResult, error) {
	t := src.Table()
	filter, err := in.Filter.Bind(t)
	if err != nil {
		return nil, err
	}
	var nodes []*aggNode
	if in.Aggs.v != nil {
		if nodes, err = parseAggs(t, in.Aggs.v, ""); err != nil {
			return nil, err
		}
	}
	plan := Compile(filter)
	rows, err := plan.Execute(ctx, src)
	if err != nil {
		return nil, err
	}
	out := &AggregateResult{Plan: AggregatePlan{filter: plan, nodes: nodes}}
	if len(nodes) == 0 {
		out.Aggs = []AggResult{{Name: "count", Kind: "count", Value: int64(rows.GetCardinality())}}
		return out, nil
	}
	r := &aggRun{ctx: ctx, src: src, x: newValueReaders(ctx, src), readers: map[*Column]valueReader{}, filters: map[*aggNode]*roaring.Bitmap{}}
	if out.Aggs, err = r.evalAll(nodes, rows); err != nil {
		return nil, err
	}
	return out, nil
}

// aggRun is one execution: the source, readers by column, and the rows of
// count filters.
type aggRun struct {
	ctx     context.Context
	src     Source
	x       *valueReaders
	readers map[*Column]valueReader
	filters map[*aggNode]*roaring.Bitmap
}

// evalAll computes aggregations on rows, in order.
func (r *aggRun) evalAll(nodes []*aggNode, rows *roaring.Bitmap) ([]AggResult, error) {
	out := make([]AggResult, len(nodes))
	for i, n := range nodes {
		if err := r.ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = AggResult{Name: n.key, Kind: n.kind}
		if err := r.eval(n, rows, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *aggRun) reader(c *Column) (valueReader, error) {
	if rd := r.readers[c]; rd != nil {
		return rd, nil
	}
	rd, err := r.x.reader(colPath{path: c.Path, col: c})
	if err != nil {
		return nil, err
	}
	r.readers[c] = rd
	return rd, nil
}

// values returns the non-null values of a column on rows, in row order.
func (r *aggRun) values(c *Column, rows *roaring.Bitmap, fn func(row uint32, v codec.Value) error) error {
	rd, err := r.reader(c)
	if err != nil {
		return err
	}
	return eachRow(r.ctx, rows, func(row uint32) error {
		v, err := rd.get(row)
		if err != nil || v.IsNull() {
			return err
		}
		return fn(row, v)
	})
}

// eval computes one aggregation on rows into res.
func (r *aggRun) eval(n *aggNode, rows *roaring.Bitmap, res *AggResult) error {
	var err error
	switch n.kind {
	case "count":
		if n.filter == nil {
			res.Value = int64(rows.GetCardinality())
			return nil
		}
		f := r.filters[n]
		if f == nil {
			if f, err = Compile(n.filter).Execute(r.ctx, r.src); err != nil {
				return err
			}
			r.filters[n] = f
		}
		res.Value = int64(rows.AndCardinality(f))
	case "sum", "min", "max", "average":
		res.Value, err = r.metric(n, rows)
	case "percentiles":
		var xs []float64
		err = r.values(n.col, rows, func(_ uint32, v codec.Value) error {
			xs = append(xs, asFloat(v))
			return nil
		})
		if err != nil {
			return err
		}
		sort.Float64s(xs)
		res.Percentiles = make([]PercentileResult, len(n.percentiles))
		for i, p := range n.percentiles {
			res.Percentiles[i].Percent = p
			if len(xs) > 0 {
				res.Percentiles[i].Value = Percentile(xs, p)
			}
		}
	case "uniqueCount":
		seen := map[string]struct{}{}
		var key []byte
		err = r.values(n.col, rows, func(_ uint32, v codec.Value) error {
			if v.Kind == codec.KindStrings {
				for _, s := range v.Strs {
					key = appendValueKey(key[:0], codec.String(s))
					seen[string(key)] = struct{}{}
				}
				return nil
			}
			key = appendValueKey(key[:0], v)
			seen[string(key)] = struct{}{}
			return nil
		})
		res.Value = int64(len(seen))
	case "topValues":
		res.Buckets, err = r.topValues(n, rows)
	case "dateHistogram", "numericHistogram":
		res.Buckets, err = r.histogram(n, rows)
	default:
		err = fmt.Errorf("index: unknown aggregation kind %q", n.kind)
	}
	return err
}

// metricFns are the summary functions of the metric kinds.
var metricFns = map[string]summaryFn{"sum": fnSum, "min": fnMin, "max": fnMax, "average": fnAverage}

// metric computes sum, min, max or average: a sum of no values is 0.
func (r *aggRun) metric(n *aggNode, rows *roaring.Bitmap) (any, error) {
	fn := metricFns[n.kind]
	var a summaryAcc
	rd, err := r.reader(n.col)
	if err != nil {
		return nil, err
	}
	if sr, ok := rd.(storeReader); !ok || !foldDense(sr.vals, n.col.Type, fn, rows, &a) {
		err := r.values(n.col, rows, func(_ uint32, v codec.Value) error {
			a.add(fn, v)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	v := a.result(fn, n.col.Type)
	switch {
	case v.Kind == codec.KindInt:
		return v.Int, nil
	case v.Kind == codec.KindFloat:
		return v.Float, nil
	case fn != fnSum:
		return nil, nil
	case n.col.Type == TypeInt:
		return int64(0), nil
	}
	return float64(0), nil
}

// Percentile is the p-th percentile (0..100) of sorted values: with the
// 1-based rank h = n·p/100 + 0.5, the linear interpolation between the
// values at ranks ⌊h⌋ and ⌊h⌋+1, clamped to the smallest and largest
// value. For [2 3 6 8 12]: p10 = 2, p20 = 2.5, p40 = 4.5, p50 = 6,
// p80 = 10, p90 = 12.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	h := float64(n)*p/100 + 0.5
	switch {
	case h <= 1:
		return sorted[0]
	case h >= float64(n):
		return sorted[n-1]
	}
	lo := math.Floor(h)
	i := int(lo) - 1
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}

// PercentileKey spells a percentile as a response key: a decimal with at
// least one fractional digit ("10.0", "99.9", "12.25").
func PercentileKey(p float64) string {
	s := strconv.FormatFloat(p, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// countedPart is the rows of a bucket with one value: as a bitmap, or as
// a list of rows in ascending order until one is needed.
type countedPart struct {
	v    codec.Value
	n    uint64
	rows *roaring.Bitmap
	list []uint32
}

func (p *countedPart) bitmap() *roaring.Bitmap {
	if p.rows == nil {
		p.rows = roaring.BitmapOf(p.list...)
	}
	return p.rows
}

// topValues computes the most frequent values of a column among rows.
func (r *aggRun) topValues(n *aggNode, rows *roaring.Bitmap) ([]AggBucket, error) {
	var parts []*countedPart
	done := false
	if indexed(n.col) && n.col.ID < MetaUpdatedAtColumn {
		vals, err := r.src.Values(n.col)
		if err != nil {
			return nil, err
		}
		if vals == nil || rows.GetCardinality() >= postingMinRows {
			ps, ok, err := partitionPostings(r.src, n.col, rows, maxPostingGroups)
			if err != nil {
				return nil, err
			}
			if ok {
				for _, p := range ps {
					if !p.v.IsNull() {
						parts = append(parts, &countedPart{v: p.v, n: p.rows.GetCardinality(), rows: p.rows})
					}
				}
				done = true
			}
		}
	}
	if !done {
		byKey := map[string]*countedPart{}
		var key []byte
		err := r.values(n.col, rows, func(row uint32, v codec.Value) error {
			key = appendValueKey(key[:0], v)
			p := byKey[string(key)]
			if p == nil {
				p = &countedPart{v: v}
				byKey[string(key)] = p
				parts = append(parts, p)
			}
			p.n++
			if len(n.sub) > 0 {
				p.list = append(p.list, row)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].n != parts[j].n {
			return parts[i].n > parts[j].n
		}
		return compareValues(parts[i].v, parts[j].v) < 0
	})
	if len(parts) > n.size {
		parts = parts[:n.size]
	}
	buckets := make([]AggBucket, 0, len(parts))
	for _, p := range parts {
		b := AggBucket{Key: topValueKey(p.v), Count: int64(p.n)}
		if err := r.addSubs(&b, n, p.bitmap); err != nil {
			return nil, err
		}
		buckets = append(buckets, b)
	}
	return buckets, nil
}

// addSubs computes the sub-aggregations of a bucket into b.
func (r *aggRun) addSubs(b *AggBucket, n *aggNode, rows func() *roaring.Bitmap) error {
	if len(n.sub) == 0 {
		return nil
	}
	subs, err := r.evalAll(n.sub, rows())
	b.Aggs = subs
	return err
}

// topValueKey spells a value as a topValues key: numbers and booleans as
// their JSON text.
func topValueKey(v codec.Value) string {
	switch v.Kind {
	case codec.KindBool:
		return strconv.FormatBool(v.Int != 0)
	case codec.KindInt:
		return strconv.FormatInt(v.Int, 10)
	case codec.KindFloat:
		return strconv.FormatFloat(v.Float, 'f', -1, 64)
	}
	return v.Str
}

// histogram computes a date or numeric histogram: buckets in ascending key
// order from the first to the last non-empty one.
func (r *aggRun) histogram(n *aggNode, rows *roaring.Bitmap) ([]AggBucket, error) {
	byStart := map[int64]*countedPart{}
	err := r.values(n.col, rows, func(row uint32, v codec.Value) error {
		k, err := n.bucketOf(v)
		if err != nil {
			return err
		}
		p := byStart[k]
		if p == nil {
			p = &countedPart{}
			byStart[k] = p
		}
		p.n++
		if len(n.sub) > 0 {
			p.list = append(p.list, row)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	buckets := []AggBucket{}
	if len(byStart) == 0 {
		return buckets, nil
	}
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for k := range byStart {
		first, last = min(first, k), max(last, k)
	}
	if n.bucketSpan(first, last) >= maxHistogramBuckets {
		return nil, aggErrorf("aggregation [%s]: more than %d buckets; use a larger interval", n.name, maxHistogramBuckets)
	}
	empty := roaring.New()
	for k, i := first, 0; ; i++ {
		if i >= maxHistogramBuckets {
			return nil, aggErrorf("aggregation [%s]: more than %d buckets; use a larger interval", n.name, maxHistogramBuckets)
		}
		b := AggBucket{Key: n.bucketKey(k)}
		rowsOf := func() *roaring.Bitmap { return empty }
		if p := byStart[k]; p != nil {
			b.Count = int64(p.n)
			rowsOf = p.bitmap
		}
		if err := r.addSubs(&b, n, rowsOf); err != nil {
			return nil, err
		}
		buckets = append(buckets, b)
		if k >= last {
			break
		}
		k = n.nextBucket(k)
	}
	return buckets, nil
}

// bucketOf returns the bucket of a value: the start of a date bucket in
// unix nanoseconds, or the index of a numeric bucket.
func (n *aggNode) bucketOf(v codec.Value) (int64, error) {
	if n.kind == "numericHistogram" {
		q := math.Floor((asFloat(v) - n.numOffset) / n.interval)
		if math.IsNaN(q) || math.Abs(q) > 1<<53 {
			return 0, aggErrorf("aggregation [%s]: value %v is too far from the offset for interval %v", n.name, asFloat(v), n.interval)
		}
		return int64(q), nil
	}
	ns := v.Int
	if n.fixed > 0 {
		off := int64(n.offset) * 1e9
		return floorDiv(ns+off, n.fixed)*n.fixed - off, nil
	}
	t := time.Unix(0, ns).In(n.loc)
	y, mo, d := t.Date()
	switch n.calendar {
	case "minute":
		t = time.Date(y, mo, d, t.Hour(), t.Minute(), 0, 0, n.loc)
	case "hour":
		t = time.Date(y, mo, d, t.Hour(), 0, 0, 0, n.loc)
	case "day":
		t = time.Date(y, mo, d, 0, 0, 0, 0, n.loc)
	case "week":
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		t = time.Date(y, mo, d-back, 0, 0, 0, 0, n.loc)
	case "month":
		t = time.Date(y, mo, 1, 0, 0, 0, 0, n.loc)
	case "quarter":
		t = time.Date(y, (mo-1)/3*3+1, 1, 0, 0, 0, 0, n.loc)
	case "year":
		t = time.Date(y, 1, 1, 0, 0, 0, 0, n.loc)
	}
	return t.UnixNano(), nil
}

// calendarMin is the shortest length of each calendar unit.
var calendarMin = map[string]time.Duration{
	"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour, "week": 7 * 24 * time.Hour,
	"month": 28 * 24 * time.Hour, "quarter": 89 * 24 * time.Hour, "year": 365 * 24 * time.Hour,
}

// bucketSpan is at least the number of buckets after first up to last, so
// that a histogram too large is refused before it is built.
func (n *aggNode) bucketSpan(first, last int64) uint64 {
	span := uint64(last - first)
	switch {
	case n.kind == "numericHistogram":
		return span
	case n.fixed > 0:
		return span / uint64(n.fixed)
	}
	return span / uint64(calendarMin[n.calendar])
}

// nextBucket returns the bucket after k.
func (n *aggNode) nextBucket(k int64) int64 {
	switch {
	case n.kind == "numericHistogram":
		return k + 1
	case n.fixed > 0:
		return k + n.fixed
	}
	t := time.Unix(0, k).In(n.loc)
	switch n.calendar {
	case "minute":
		t = t.Add(time.Minute)
	case "hour":
		t = t.Add(time.Hour)
	case "day":
		t = t.AddDate(0, 0, 1)
	case "week":
		t = t.AddDate(0, 0, 7)
	case "month":
		t = t.AddDate(0, 1, 0)
	case "quarter":
		t = t.AddDate(0, 3, 0)
	case "year":
		t = t.AddDate(1, 0, 0)
	}
	return t.UnixNano()
}

// bucketKey is the key of a bucket: its start as a time in the requested
// timezone, or a number.
func (n *aggNode) bucketKey(k int64) any {
	if n.kind == "numericHistogram" {
		key := float64(k)*n.interval + n.numOffset
		if key == 0 {
			key = 0 // no -0
		}
		return key
	}
	return time.Unix(0, k).In(n.loc)
}

// floorDiv divides rounding towards negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
