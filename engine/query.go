package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index"
)

// Doc is a projected record ready for output: id, metadata and the
// selected values by column name. Objects are nested map[string]any, an
// expanded link is a *Doc, an unexpanded one a Link, and a reverse link a
// RevLinkResult. Other values have the types FromValue documents.
type Doc struct {
	ID        string
	Version   uint64
	CreatedAt time.Time
	UpdatedAt time.Time
	Values    map[string]any
}

// RevLinkResult is the value of a reverse-link projection.
type RevLinkResult struct {
	Records []*Doc
}

// The requests of queries, summaries and aggregations and their parts are
// the index package's, named here so that callers of the engine need not
// import it: index.ReadFilter and its kin read them from JSON, and
// index.FilterOf and its kin build them from Go values.
type (
	QueryRequest     = index.QueryRequest
	PageInput        = index.PageInput
	Filter           = index.Filter
	Sort             = index.Sort
	Columns          = index.Columns
	SummarizeRequest = index.SummarizeRequest
	Summary          = index.Summary
	SummarizeResult  = index.SummarizeResult
	SummaryRow       = index.SummaryRow
	AggregateRequest = index.AggregateRequest
	Aggs             = index.Aggs
	AggregateResult  = index.AggregateResult
	AggResult        = index.AggResult
	AggBucket        = index.AggBucket
	QueryPlan        = index.QueryPlan
	SummarizePlan    = index.SummarizePlan
	ExplainNode      = index.ExplainNode
)

// FilterOf makes a Filter of a value built in Go (or decoded from JSON):
// maps, []any, strings, bools, nil, numbers and time.Time, as the filter
// language of the spec reads them; nil is no filter.
func FilterOf(v any) Filter { return index.FilterOf(v) }

// SortOf makes a Sort of a value such as "name", map[string]any{"price":
// "desc"} or []any of those; nil is no sort.
func SortOf(v any) Sort { return index.SortOf(v) }

// QueryOptions are the server settings of a query.
type QueryOptions struct {
	// MaxSize, MaxOffset and MaxDepth are the page limits (spec §8 or the
	// compat ones); zero values mean the spec's 200, 800 and 1000.
	MaxSize, MaxOffset, MaxDepth int
	// NoDepthLimit turns off the size+offset rule (compat mode).
	NoDepthLimit bool
}

func (o *QueryOptions) defaults() {
	if o.MaxSize == 0 {
		o.MaxSize = 200
	}
	if o.MaxOffset == 0 {
		o.MaxOffset = 800
	}
	if o.MaxDepth == 0 && !o.NoDepthLimit {
		o.MaxDepth = 1000
	}
}

// QueryResult is a page of records, its meta, and the plan that found it.
type QueryResult struct {
	Records []*Doc
	Cursor  string
	More    bool
	Size    int
	// Plan is how the query found the page. With QueryRequest.Explain its
	// steps carry rows and times, and a "records" step, reading and
	// projecting the page, sits between the query and the order.
	Plan *QueryPlan
}

// cursorSecretName is the server-state entry holding the cursor key.
const cursorSecretName = "cursor-secret"

// cursorSecret returns the per-server secret that signs cursors.
func (e *Engine) cursorSecret() ([]byte, error) { return e.serverSecret(cursorSecretName) }

// serverSecret returns the per-server secret stored under name, creating it
// on first use (as cursorSecret does for cursors).
func (e *Engine) serverSecret(name string) ([]byte, error) {
	if s := e.cat.ServerState(name); s != nil {
		return s, nil
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	res, err := e.applyCatalog(&catalog.SetServerState{Name: name, Value: fresh})
	if err != nil {
		return nil, err
	}
	return res.([]byte), nil
}

// Meta is the record metadata key of Options.Meta: what filters and other
// requests name the metadata columns under.
func (e *Engine) Meta() string { return e.opts.Meta }

// Query runs a query (filter, sort, page, columns) on a table of a branch.
// It stops with ctx's error when ctx ends.
func (e *Engine) Query(ctx context.Context, ref Ref, tableName string, in QueryRequest, opts QueryOptions) (*QueryResult, error) {
	var start time.Time
	if in.Explain {
		start = time.Now()
	}
	opts.defaults()
	secret, err := e.cursorSecret()
	if err != nil {
		return nil, err
	}
	src, release, err := e.openSource(ctx, ref, tableName, memstore.Optional)
	if err != nil {
		return nil, err
	}
	defer release()
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, err
	}
	page, err := index.Query(ctx, src, in, index.QueryOptions{
		Meta: e.opts.Meta, Secret: secret, MaxSize: opts.MaxSize, MaxOffset: opts.MaxOffset,
		MaxDepth: opts.MaxDepth, DefaultSize: 20, Seed: binary.BigEndian.Uint64(seed[:]),
	})
	if err != nil {
		return nil, queryError(err)
	}
	proj, err := index.ParseColumns(src.it, page.Columns, e.opts.Meta, src.tableByName)
	if err != nil {
		return nil, queryError(err)
	}
	var records *ExplainNode
	var read time.Time
	if in.Explain {
		records = &ExplainNode{Kind: "records", Detail: "read and project"}
		read = records.Begin()
	}
	docs, err := src.docs(page.Rows, proj)
	if err != nil {
		return nil, err
	}
	if in.Explain {
		root := page.Plan.Tree()
		records.End(read, uint64(len(page.Rows)), uint64(len(docs)))
		records.Time += root.Children[0].Time
		records.Children, root.Children = root.Children, []*ExplainNode{records}
		root.Actual, root.Time = uint64(len(docs)), time.Since(start)
	}
	return &QueryResult{Records: docs, Cursor: page.Cursor, More: page.More, Size: page.Size, Plan: &page.Plan}, nil
}

// queryError turns the index package's input errors into CodeInvalid.
func queryError(err error) error {
	var ie *index.InputError
	if errors.As(err, &ie) {
		return model.Invalidf("%s", ie.Message)
	}
	return err
}

// tableByName finds a table of the source's branch for reverse links.
func (s *source) tableByName(name string) *index.Table {
	t := s.b.Schema.ByName[name]
	if t == nil {
		return nil
	}
	return s.b.Schema.IndexTables()[t.ID]
}

// sourceFor returns a source for another table of the same branch and
// snapshot.
func (s *source) sourceFor(t *model.Table) *source {
	var store *memstore.TableStore
	if st := s.d.Store(storeKey{Branch: s.b.ID, Table: t.ID}); st != nil && st.Version() == s.b.Version {
		store = st
	}
	return &source{ctx: s.ctx, e: s.e, d: s.d, snap: s.snap, st: s.st, b: s.b, t: t, it: s.b.Schema.IndexTables()[t.ID], store: store}
}

// docs reads and projects rows in order.
func (s *source) docs(rows []uint32, p *index.Projection) ([]*Doc, error) {
	byRow := make([]*Doc, len(rows))
	lin := s.d.Filled.Prune(s.snap, s.d.ID, s.b.Lineage, s.t.ID, codec.KindRecordCur)
	err := layers.ReadRows(s.snap, s.d.ID, lin, s.t.ID, rows, func(i int, rec *codec.Record) error {
		d, err := s.doc(rec, p)
		byRow[i] = d
		return err
	})
	if err != nil {
		return nil, err
	}
	out := byRow[:0]
	for _, d := range byRow {
		if d != nil {
			out = append(out, d)
		}
	}
	return out, nil
}

// doc projects one stored record.
func (s *source) doc(rec *codec.Record, p *index.Projection) (*Doc, error) {
	d := &Doc{
		ID: rec.ID, Version: rec.Version,
		CreatedAt: time.Unix(0, rec.CreatedAt).UTC(), UpdatedAt: time.Unix(0, rec.UpdatedAt).UTC(),
		Values: map[string]any{},
	}
	for _, f := range rec.Fields {
		c := s.t.ByID[f.Col]
		if c == nil {
			continue
		}
		if c.Type == TypeLink {
			if sub := p.Links[c.Path]; sub != nil {
				linked, err := s.linkedDoc(c, f.Val.Str, sub)
				if err != nil {
					return nil, err
				}
				if linked != nil {
					index.SetPath(d.Values, c.Path, linked)
				}
				continue
			}
		}
		if model.IsFileType(c.Type) {
			v, err := s.docFiles(c, rec, f.Val, p)
			if err != nil {
				return nil, err
			}
			if v != nil {
				index.SetPath(d.Values, c.Path, v)
			}
			continue
		}
		if p.Selected(c.Path) {
			index.SetPath(d.Values, c.Path, model.FromValue(c, f.Val))
		}
	}
	for _, rl := range p.RevLinks {
		res, err := s.revLink(rec.ID, rl)
		if err != nil {
			return nil, err
		}
		d.Values[rl.As] = res
	}
	return d, nil
}

// linkedDoc reads and projects the record a link points at; nil when it is
// gone.
func (s *source) linkedDoc(c *model.Column, id string, p *index.Projection) (*Doc, error) {
	t := s.b.Schema.ByID[c.LinkTable]
	if t == nil {
		return nil, nil
	}
	ts := s.sourceFor(t)
	e, _, ok, err := layers.LookupID(ts.snap, ts.d.ID, ts.b.Lineage, t.ID, id)
	if err != nil || !ok {
		return nil, err
	}
	var rec codec.Record
	found, err := ts.Record(e.Row, &rec)
	if err != nil || !found {
		return nil, err
	}
	return ts.doc(&rec, p)
}

// revLink reads the records of another table linking to id.
func (s *source) revLink(id string, rl *index.RevLink) (*RevLinkResult, error) {
	t := s.b.Schema.ByID[rl.Table.ID]
	res := &RevLinkResult{Records: []*Doc{}}
	if t == nil || rl.Limit == 0 {
		return res, nil
	}
	ts := s.sourceFor(t)
	rows, err := ts.Posting(rl.Column, codec.String(id))
	if err != nil {
		return nil, err
	}
	picked, _, err := index.Select(s.ctx, ts, rows, rl.Order, index.Window{Limit: rl.Offset + rl.Limit})
	if err != nil {
		return nil, err
	}
	if rl.Offset >= len(picked) {
		return res, nil
	}
	docs, err := ts.docs(picked[rl.Offset:], rl.Select)
	if err != nil {
		return nil, err
	}
	res.Records = docs
	return res, nil
}

// FilterRows returns the rows of a table that match a filter, for tests
// and benchmarks that check what a filter selects.
func (e *Engine) FilterRows(ref Ref, tableName string, filter Filter) (*roaring.Bitmap, error) {
	src, release, err := e.openSource(context.Background(), ref, tableName, memstore.Optional)
	if err != nil {
		return nil, err
	}
	defer release()
	rows, err := index.Matching(src.ctx, src, filter, e.opts.Meta)
	if err != nil {
		return nil, queryError(err)
	}
	return rows, nil
}

// Project returns records, as writes and Get return them, projected by a
// columns list (the zero Columns selects every column) with links expanded
// and reverse links attached, read at one snapshot of the branch. Records
// that did not come from the engine are an error.
func (e *Engine) Project(ref Ref, tableName string, recs []*Record, columns Columns) ([]*Doc, error) {
	d, b, t, err := e.resolveTable(ref, tableName)
	if err != nil {
		return nil, err
	}
	// Projecting reads a bounded number of records: no deadline.
	src := &source{ctx: context.Background(), e: e, d: d, b: b, t: t, it: b.Schema.IndexTables()[t.ID]}
	proj, err := index.ParseColumns(src.it, columns, e.opts.Meta, src.tableByName)
	if err != nil {
		return nil, queryError(err)
	}
	if len(proj.Links) > 0 || len(proj.RevLinks) > 0 || len(proj.FileFields) > 0 {
		// Expanding links reads other records: at one snapshot.
		var release func()
		if src, release, err = e.openSource(src.ctx, ref, tableName, memstore.Optional); err != nil {
			return nil, err
		}
		defer release()
	}
	out := make([]*Doc, 0, len(recs))
	for _, r := range recs {
		if r == nil || r.stored == nil {
			return nil, errors.New("engine: projecting a record the engine did not return")
		}
		doc, err := src.doc(r.stored, proj)
		if err != nil {
			return nil, err
		}
		out = append(out, doc)
	}
	return out, nil
}

// CheckColumns validates a columns list against a table without reading
// data, so that a write with a bad list changes nothing.
func (e *Engine) CheckColumns(ref Ref, tableName string, columns Columns) error {
	s, err := e.branchSchema(ref)
	if err != nil {
		return err
	}
	t, err := s.Table(tableName)
	if err != nil {
		return err
	}
	tables := s.IndexTables()
	_, err = index.ParseColumns(tables[t.ID], columns, e.opts.Meta, func(name string) *index.Table {
		if x := s.ByName[name]; x != nil {
			return tables[x.ID]
		}
		return nil
	})
	return queryError(err)
}
