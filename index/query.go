package index

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
)

// QueryRequest is a query (spec §4.1.1): filter, sort, columns and page.
// Filter, Sort and Columns are read from JSON (ReadFilter, ReadSort,
// ReadColumns) or built from Go values; their zero values are no filter,
// ascending id and every column.
type QueryRequest struct {
	Filter  Filter
	Sort    Sort
	Columns Columns
	Page    PageInput
	// Explain asks for the steps of the query as they ran, with their rows
	// and times, in Page.Plan. Without it no step is timed or counted.
	Explain bool
}

// PageInput is the page object of a query.
type PageInput struct {
	Size   *int
	Offset *int
	After  *string
	Before *string
	Start  *string
	End    *string
}

// QueryOptions are the server's settings for queries.
type QueryOptions struct {
	// Secret signs cursors.
	Secret []byte
	// MaxSize and MaxOffset bound page.size and page.offset; MaxDepth, when
	// positive, bounds size+offset of offset pagination without a cursor.
	MaxSize, MaxOffset, MaxDepth int
	// DefaultSize is the page size when neither the request nor a cursor
	// gives one.
	DefaultSize int
	// Seed orders a new random sort.
	Seed uint64
}

// Page is the answer of a query: the rows of the page in order, the columns
// to project (from the request or its cursor), the page meta, and the plan
// that found them.
type Page struct {
	Rows    []uint32
	Columns Columns
	Cursor  string
	More    bool
	Size    int
	Plan    QueryPlan
}

// queryErrorf makes an *InputError about a query request.
func queryErrorf(format string, args ...any) error { return inputErrorf(format, args...) }

// Query runs a query on src: filter, order, the page the cursor rules of
// spec §4.1.7 select. It stops with ctx's error when ctx ends.
func Query(ctx context.Context, src Source, in QueryRequest, opts QueryOptions) (*Page, error) {
	p := in.Page
	filter, sort, columns := in.Filter, in.Sort, in.Columns
	st := &cursorState{Filter: filter.JSON(), Sort: sort.JSON(), Columns: columns.JSON(), Seed: opts.Seed}
	// incoming is the cursor the request continues from; afterC and beforeC
	// are the cursors positioning it.
	var incoming, afterC, beforeC *cursorState
	tailEnd, lastPage := false, false
	open := func(s string) (*cursorState, error) {
		c, err := openCursor(s, opts.Secret)
		if err != nil {
			return nil, err
		}
		if !filter.IsZero() || !sort.IsZero() {
			return nil, queryErrorf("filter and sort cannot be set together with a cursor")
		}
		return c, nil
	}
	var err error
	switch {
	case p.Start != nil || p.End != nil:
		if p.After != nil || p.Before != nil || (p.Start != nil && p.End != nil) {
			return nil, queryErrorf("page.start and page.end cannot be combined with other cursors")
		}
		s := p.Start
		if s == nil {
			s, lastPage = p.End, true
		}
		if incoming, err = open(*s); err != nil {
			return nil, err
		}
	case p.After != nil && *p.After == "end":
		if p.Before != nil {
			return nil, queryErrorf("page.after=end cannot be combined with page.before")
		}
		tailEnd = true
	case p.Before != nil && *p.Before == "end":
		if p.After != nil {
			return nil, queryErrorf("page.before=end cannot be combined with page.after")
		}
		lastPage = true
	default:
		if p.After != nil {
			if afterC, err = open(*p.After); err != nil {
				return nil, err
			}
		}
		if p.Before != nil {
			if beforeC, err = open(*p.Before); err != nil {
				return nil, err
			}
		}
		if afterC != nil && beforeC != nil && (!bytes.Equal(afterC.Filter, beforeC.Filter) || !bytes.Equal(afterC.Sort, beforeC.Sort)) {
			return nil, queryErrorf("page.after and page.before must come from the same filter and sort")
		}
		incoming = afterC
		if incoming == nil {
			incoming = beforeC
		}
	}
	// cq is the incoming cursor's filter and sort, decoded, and bound to
	// a table once for the pages that follow.
	var cq *cursorQuery
	if incoming != nil {
		st.Filter, st.Sort, st.Seed = incoming.Filter, incoming.Sort, incoming.Seed
		if cq, err = readCursorQuery(st.Filter, st.Sort); err != nil {
			return nil, err
		}
		filter, sort = cq.filter, cq.sort
		if columns.IsZero() {
			st.Columns = incoming.Columns
			if columns, err = ReadColumns(st.Columns); err != nil {
				return nil, err
			}
		}
	}
	// Page size and offset.
	size := opts.DefaultSize
	if incoming != nil {
		size = incoming.Size
	}
	if p.Size != nil {
		size = *p.Size
	}
	offset := 0
	if p.Offset != nil {
		offset = *p.Offset
	}
	if size < 1 {
		return nil, queryErrorf("page size must be at least 1")
	}
	if size > opts.MaxSize {
		return nil, queryErrorf("page size exceeds max limit of %d", opts.MaxSize)
	}
	if offset < 0 {
		return nil, queryErrorf("page offset must not be negative")
	}
	if offset > opts.MaxOffset {
		return nil, queryErrorf("page offset must not exceed %d", opts.MaxOffset)
	}
	if opts.MaxDepth > 0 && incoming == nil && size+offset > opts.MaxDepth {
		return nil, queryErrorf("offset pagination is limited to %d records (page.size + page.offset)", opts.MaxDepth)
	}
	st.Size = size

	var b *boundQuery
	if cq != nil {
		b, err = cq.bind(src.Table())
	} else {
		b, err = bindFirstPage(src.Table(), filter, sort)
	}
	if err != nil {
		return nil, err
	}
	order := b.order
	order.Seed = st.Seed
	var after, before *Key
	if afterC != nil {
		if after, err = decodeKey(afterC.Last, len(order.Keys)); err != nil {
			return nil, err
		}
	}
	if beforeC != nil {
		if before, err = decodeKey(beforeC.First, len(order.Keys)); err != nil {
			return nil, err
		}
	}
	if after != nil && before != nil && order.compareKeys(*after, *before) >= 0 {
		return nil, queryErrorf("page.after must come before page.before")
	}
	reverse := lastPage || (beforeC != nil && afterC == nil)

	page := &Page{Columns: columns, Size: size}
	qp := &page.Plan
	*qp = QueryPlan{filter: Plan{root: b.root}, order: order, size: size, offset: offset}
	w := Window{After: after, Before: before, Limit: offset + size + 1, Reverse: reverse}
	if !tailEnd {
		rows, keys, lazy, err := qp.selectLazy(ctx, src, w, in.Explain)
		if err != nil {
			return nil, err
		}
		if lazy {
			return page, finishPage(page, st, rows, keys, offset, size, reverse, afterC, beforeC, opts.Secret)
		}
	}
	var cand *roaring.Bitmap
	if in.Explain {
		cand, err = qp.explain(ctx, src)
	} else {
		cand, err = qp.filter.Execute(ctx, src)
	}
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if tailEnd {
		rows, keys, err := qp.selectPage(ctx, src, cand, Window{Limit: 1, Reverse: true})
		if err != nil {
			return nil, err
		}
		if len(rows) == 1 {
			ck, err := encodeKey(keys[0])
			if err != nil {
				return nil, err
			}
			st.First, st.Last = ck, ck
		}
		page.Cursor, err = sealCursor(st, opts.Secret)
		qp.ran(0)
		return page, err
	}
	rows, keys, err := qp.selectPage(ctx, src, cand, w)
	if err != nil {
		return nil, err
	}
	return page, finishPage(page, st, rows, keys, offset, size, reverse, afterC, beforeC, opts.Secret)
}

// finishPage cuts the window's rows to the page and seals the cursor of
// the page's first and last rows.
func finishPage(page *Page, st *cursorState, rows []uint32, keys []Key, offset, size int, reverse bool, afterC, beforeC *cursorState, secret []byte) error {
	var err error
	rows, keys, page.More = cut(rows, keys, offset, size)
	if reverse {
		reverseRows(rows, keys)
	}
	page.Rows = rows
	if len(rows) > 0 {
		if st.First, err = encodeKey(keys[0]); err != nil {
			return err
		}
		if st.Last, err = encodeKey(keys[len(keys)-1]); err != nil {
			return err
		}
	} else if afterC != nil {
		// Past the end: keep the position, so the cursor can tail.
		st.First, st.Last = afterC.Last, afterC.Last
	} else if beforeC != nil {
		st.First, st.Last = beforeC.First, beforeC.First
	}
	page.Cursor, err = sealCursor(st, secret)
	page.Plan.ran(len(page.Rows))
	return err
}

// cut skips offset rows and keeps size; more tells whether rows were left.
func cut(rows []uint32, keys []Key, offset, size int) ([]uint32, []Key, bool) {
	if offset >= len(rows) {
		return nil, nil, false
	}
	rows, keys = rows[offset:], keys[offset:]
	if len(rows) > size {
		return rows[:size], keys[:size], true
	}
	return rows, keys, false
}

func reverseRows(rows []uint32, keys []Key) {
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
		keys[i], keys[j] = keys[j], keys[i]
	}
}

// Matching binds and runs a filter alone: the rows of src matching it. It
// stops with ctx's error once ctx ends.
func Matching(ctx context.Context, src Source, f Filter) (*roaring.Bitmap, error) {
	n, err := f.Bind(src.Table())
	if err != nil {
		return nil, err
	}
	return Compile(n).Execute(ctx, src)
}

// boundQuery is a filter and sort bound to a table: the filter's plan and
// the order.
type boundQuery struct {
	table *Table
	root  planNode
	order Order
}

// bindQuery binds a filter and a sort to t.
func bindQuery(t *Table, filter Filter, sort Sort) (*boundQuery, error) {
	node, err := filter.Bind(t)
	if err != nil {
		return nil, err
	}
	order, err := ParseSort(t, sort.v)
	if err != nil {
		return nil, err
	}
	return &boundQuery{table: t, root: compile(node), order: order}, nil
}

// cursorQueries keeps the filter and sort of recent cursors decoded, and
// bound to the table their last page read: a walk carries the same ones
// from page to page, and decoding their JSON again costs a page read from
// the record cache about a tenth of its time, binding and planning them
// about as much again, which the pages after the first need not pay. A
// first page read from the same JSON text takes the binding too
// (bindFirstPage), and keeps its own when there is none. A table is one
// version of its schema (a *Table is not changed once made), so a binding
// is reused only for the same *Table, and bound again for another.
// Decoded values and bindings are only read (plans are not changed as they
// run, an order's keys are not), so pages share them. At most maxCursorQueries are kept, each of at most
// maxCursorQueryBytes of JSON (a larger one is decoded and bound every
// time); a full cache starts over.
var cursorQueries struct {
	mu sync.Mutex
	m  map[string]*cursorQuery
}

// cursorQuery is a cursor's filter and sort, decoded, and their binding
// to the table of the latest page that read them.
type cursorQuery struct {
	filter Filter
	sort   Sort
	bound  atomic.Pointer[boundQuery]
}

// bind returns the query bound to t, binding it when its binding is not
// to t.
func (q *cursorQuery) bind(t *Table) (*boundQuery, error) {
	if b := q.bound.Load(); b != nil && b.table == t {
		return b, nil
	}
	b, err := bindQuery(t, q.filter, q.sort)
	if err != nil {
		return nil, err
	}
	q.bound.Store(b)
	return b, nil
}

// maxCursorQueries and maxCursorQueryBytes bound cursorQueries: 512
// entries of at most 4 KiB of filter and sort, about 2 MiB of keys.
const (
	maxCursorQueries    = 512
	maxCursorQueryBytes = 4 << 10
)

// readCursorQuery reads the filter and sort a cursor carries, as
// ReadFilter and ReadSort do, through cursorQueries.
func readCursorQuery(filter, sort []byte) (*cursorQuery, error) {
	if len(filter)+len(sort) > maxCursorQueryBytes {
		f, err := ReadFilter(filter)
		if err != nil {
			return nil, err
		}
		so, err := ReadSort(sort)
		if err != nil {
			return nil, err
		}
		return &cursorQuery{filter: f, sort: so}, nil
	}
	var buf [cursorKeyBuf]byte
	key := cursorQueryKey(buf[:0], filter, sort)
	if q := lookupCursorQuery(key); q != nil {
		return q, nil
	}
	q := &cursorQuery{}
	var err error
	// The cache's copies: filter and sort are the request's.
	if q.filter, err = ReadFilter(bytes.Clone(filter)); err != nil {
		return nil, err
	}
	if q.sort, err = ReadSort(bytes.Clone(sort)); err != nil {
		return nil, err
	}
	keepCursorQuery(key, q)
	return q, nil
}

// bindFirstPage binds the filter and sort of a query without a cursor.
// Read from JSON text, they are the ones its cursor carries to the next
// page, and the same text binds to the same plan on one table: the
// binding is looked up in cursorQueries, where the following pages of
// this query or an earlier one with the same text keep theirs, and kept
// there when not found, for the next first page and for the next page's
// cursor. A filter or sort built from Go values has no text of its own
// and is bound every time.
func bindFirstPage(t *Table, filter Filter, sort Sort) (*boundQuery, error) {
	if (filter.raw == nil && filter.v != nil) || (sort.raw == nil && sort.v != nil) ||
		len(filter.raw)+len(sort.raw) > maxCursorQueryBytes {
		return bindQuery(t, filter, sort)
	}
	var buf [cursorKeyBuf]byte
	key := cursorQueryKey(buf[:0], filter.raw, sort.raw)
	if q := lookupCursorQuery(key); q != nil {
		return q.bind(t)
	}
	b, err := bindQuery(t, filter, sort)
	if err != nil {
		return nil, err
	}
	// The cache's copies of the text: the request's may be reused once
	// it is answered. The decoded values are only read, as a cursor's
	// are.
	q := &cursorQuery{filter: Filter{raw: bytes.Clone(filter.raw), v: filter.v}, sort: Sort{raw: bytes.Clone(sort.raw), v: sort.v}}
	q.bound.Store(b)
	keepCursorQuery(key, q)
	return b, nil
}

// cursorKeyBuf is the size of the buffer a key of cursorQueries is built
// in without allocating, when it fits.
const cursorKeyBuf = 256

// cursorQueryKey appends the key of a filter and sort in cursorQueries to
// dst: the filter's length, the filter, the sort.
func cursorQueryKey(dst, filter, sort []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(filter)))
	return append(append(dst, filter...), sort...)
}

// lookupCursorQuery returns the entry of key in cursorQueries, or nil.
func lookupCursorQuery(key []byte) *cursorQuery {
	cursorQueries.mu.Lock()
	q := cursorQueries.m[string(key)]
	cursorQueries.mu.Unlock()
	return q
}

// keepCursorQuery keeps q under key in cursorQueries, starting the cache
// over when it is full.
func keepCursorQuery(key []byte, q *cursorQuery) {
	cursorQueries.mu.Lock()
	if len(cursorQueries.m) >= maxCursorQueries || cursorQueries.m == nil {
		cursorQueries.m = make(map[string]*cursorQuery, 64)
	}
	cursorQueries.m[string(key)] = q
	cursorQueries.mu.Unlock()
}
