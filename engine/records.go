package engine

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index"
)

// Ref addresses a branch: a workspace (core id), a database name and a
// branch name.
type Ref struct {
	Workspace string
	Database  string
	Branch    string
}

// Record is a record as callers see it.
type Record struct {
	ID        string
	Version   uint64
	CreatedAt time.Time
	UpdatedAt time.Time
	// Values holds the non-null columns by name; object columns are nested
	// map[string]any. Value types are those FromValue documents.
	Values map[string]any

	stored *codec.Record // the stored version, for projections
}

// OpResult is the outcome of one operation.
type OpResult struct {
	Kind OpKind
	ID   string
	// Rows is 1 when the operation wrote or found a record, else 0.
	Rows int
	// Created is true when an insert or upsert created the record.
	Created bool
	// Record is the record after the write; for a delete, before it; for a
	// get, the record read (nil when missing).
	Record *Record
}

// Limits of one request.
const (
	MaxBulkRecords   = 1000
	MaxTransactionOp = 1000
)

// resolveOps fixes the non-deterministic parts of a write before it is
// applied: generated ids and the time. It returns the operations whose ids
// are invalid; bulk says they are the records of a bulk insert.
func (e *Engine) resolveOps(ops []Op, bulk bool) (time.Time, []OpError) {
	now := e.now()
	gen := func() string { return e.ids.Next("rec_", now) }
	var errs []OpError
	for i := range ops {
		op := &ops[i]
		if err := apply.ResolveID(op, gen); err != nil {
			errs = append(errs, OpError{Index: i, Err: apply.OpError(op, err, bulk)})
		}
	}
	return now, errs
}

// CheckOps checks operations against the schema of a branch alone, without
// running them: tables, record ids, columns, value types, notNull columns
// without a default on inserts, numeric operators and file values. It
// reports every failing operation in *OpErrors, and nil when all pass;
// what depends on the records (existence, versions, unique values, link
// targets) is left to Write.
func (e *Engine) CheckOps(ref Ref, ops []Op) error {
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return err
	}
	b, err := d.State().Branch(ref.Branch)
	if err != nil {
		return err
	}
	if errs := e.checkOps(b.Schema, ops, nil, false); errs != nil {
		return &OpErrors{Errors: errs}
	}
	return nil
}

// checkOps adds to errs, in index order, the operations not named there
// yet that fail against schema s; see CheckOps. bulk says they are the
// records of a bulk insert.
func (e *Engine) checkOps(s *model.Schema, ops []Op, errs []OpError, bulk bool) []OpError {
	named := make(map[int]bool, len(errs))
	for _, oe := range errs {
		named[oe.Index] = true
	}
	for i := range ops {
		if named[i] {
			continue
		}
		op := ops[i] // a copy: resolveOp may set its id
		if err := apply.CheckOp(s, &op, bulk); err != nil {
			errs = append(errs, OpError{Index: i, Err: err})
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Index < errs[j].Index })
	return errs
}

// Write applies ops as one transaction on a branch: all of them or none.
// Later operations see earlier ones. A failing operation returns *OpErrors
// naming it; unless single is set, messages are prefixed with the table.
//
// A write whose ctx has ended is not started; once it has the database,
// it runs to the end, so that applying it depends on nothing but the
// database and the operations.
func (e *Engine) Write(ctx context.Context, ref Ref, ops []Op) ([]OpResult, error) {
	return e.write(ctx, ref, ops, false)
}

// write is Write; bulk says ops are the records of a bulk insert.
func (e *Engine) write(ctx context.Context, ref Ref, ops []Op, bulk bool) ([]OpResult, error) {
	if len(ops) > MaxTransactionOp {
		return nil, model.Invalidf("a transaction holds at most %d operations, got %d", MaxTransactionOp, len(ops))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return nil, err
	}
	ops = append([]Op(nil), ops...)
	now, errs := e.resolveOps(ops, bulk)
	if len(ops) > 0 && !bulk && !ops[0].MissingNotFound {
		// A transaction reports every operation that cannot run, not only
		// the first: check them all against the schema before running any.
		b, err := d.State().Branch(ref.Branch)
		if err != nil {
			return nil, err
		}
		errs = e.checkOps(b.Schema, ops, errs, false)
	}
	if errs != nil {
		return nil, &OpErrors{Errors: errs}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := e.apply(d, &apply.WriteRecords{Branch: ref.Branch, Now: now, Ops: ops, Bulk: bulk, Queued: onGroupWait(ctx), Yield: onPrepareYield(ctx), WriterYield: onWriterYield(ctx)})
	if err != nil {
		return nil, err
	}
	applied := res.([]apply.OpResult)
	results := make([]OpResult, len(applied))
	for i, r := range applied {
		results[i] = publicResult(&r)
	}
	return results, nil
}

// groupWaitKey is the context key of OnGroupWait's function.
type groupWaitKey struct{}

// OnGroupWait returns a context under which a single-record write or a
// bulk insert calls fn once it has joined the writes of its database
// waiting to be committed together. From then on its caller only waits:
// the writer holding the database's writer lock applies the group, one
// group at a time per database, and the group shares one sync. A server
// may give the caller's execution slot to another request then. fn runs
// at most once, on the caller's goroutine, and is not called for a write
// that fails before it is queued, a transaction of several operations or
// a replicated database's write.
func OnGroupWait(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, groupWaitKey{}, fn)
}

// onGroupWait returns the function OnGroupWait set on ctx, or nil.
func onGroupWait(ctx context.Context) func() { return hookOf(ctx, groupWaitKey{}) }

// prepareYieldKey is the context key of OnPrepareYield's function.
type prepareYieldKey struct{}

// OnPrepareYield returns a context under which a bulk insert calls fn
// every few records while it prepares them (converting their values and
// tokenizing their text), before it takes the database's writer lock and
// holding no lock. fn runs on the caller's goroutine and may block: a
// server lets other work run meanwhile.
func OnPrepareYield(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, prepareYieldKey{}, fn)
}

// onPrepareYield returns the function OnPrepareYield set on ctx, or nil.
func onPrepareYield(ctx context.Context) func() { return hookOf(ctx, prepareYieldKey{}) }

// writerYieldKey is the context key of OnWriterYield's function.
type writerYieldKey struct{}

// OnWriterYield returns a context under which the writer applying a bulk
// insert calls fn where it yields its processor, every few records and
// every few hundred bitmaps it stages, holding the database's writer
// lock. fn runs on the writer's goroutine and must return promptly (a
// server may make its processor poll the network there, which a query
// arriving meanwhile is waiting for).
func OnWriterYield(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, writerYieldKey{}, fn)
}

// onWriterYield returns the function OnWriterYield set on ctx, or nil.
func onWriterYield(ctx context.Context) func() { return hookOf(ctx, writerYieldKey{}) }

// hookOf returns the function set on ctx under key, or nil.
func hookOf(ctx context.Context, key any) func() {
	fn, _ := ctx.Value(key).(func())
	return fn
}

// publicResult returns the result of an operation as callers see it.
func publicResult(r *apply.OpResult) OpResult {
	out := OpResult{Kind: r.Kind, ID: r.ID, Rows: r.Rows, Created: r.Created}
	if r.Rec != nil {
		out.Record = ownedPublicRecord(r.Tbl, r.Rec)
	}
	return out
}

// WriteOne applies a single operation and returns its result; failures are
// plain *Error values.
func (e *Engine) WriteOne(ref Ref, op Op) (OpResult, error) {
	return e.WriteOneContext(context.Background(), ref, op)
}

// WriteOneContext is WriteOne with a context, as for Write.
func (e *Engine) WriteOneContext(ctx context.Context, ref Ref, op Op) (OpResult, error) {
	op.MissingNotFound = true
	res, err := e.Write(ctx, ref, []Op{op})
	var oe *OpErrors
	if errors.As(err, &oe) && len(oe.Errors) == 1 {
		return OpResult{}, oe.Errors[0].Err
	}
	if err != nil {
		return OpResult{}, err
	}
	return res[0], nil
}

// BulkInsert inserts up to MaxBulkRecords records in one batch: all or
// nothing. Invalid records are all reported in *OpErrors. ctx is as for
// Write.
func (e *Engine) BulkInsert(ctx context.Context, ref Ref, tableName string, records []map[string]any) ([]OpResult, error) {
	if len(records) > MaxBulkRecords {
		return nil, model.Invalidf("bulk insert takes at most %d records, got %d", MaxBulkRecords, len(records))
	}
	ops := make([]Op, len(records))
	for i, r := range records {
		ops[i] = Op{Kind: OpInsert, Table: tableName, Values: r, CreateOnly: true}
	}
	res, err := e.write(ctx, ref, ops, true)
	var oe *OpErrors
	if errors.As(err, &oe) {
		// Report every invalid record, not only the first: check the rest
		// against the schema alone (a missing table is one failure, not
		// one per record). Checking only after a failure keeps the common,
		// valid bulk from filling every record twice.
		if _, b, _, terr := e.resolveTable(ref, tableName); terr == nil {
			oe.Errors = e.checkOps(b.Schema, ops, oe.Errors, true)
		}
	}
	return res, err
}

// Get reads one record of a branch.
func (e *Engine) Get(ref Ref, tableName, id string) (*Record, error) {
	d, b, t, err := e.resolveTable(ref, tableName)
	if err != nil {
		return nil, err
	}
	hint := e.hintRow(d, b, t, id)
	d.Pin()
	defer d.Unpin()
	// The lineage read must be loaded under the pin: layers it names stay.
	if b, err = d.State().Branch(ref.Branch); err != nil {
		return nil, err
	}
	if t, err = b.Schema.Table(tableName); err != nil {
		return nil, err
	}
	var rec codec.Record
	if _, err := e.readRecordHinted(d, b, t, id, hint, &rec); err != nil {
		return nil, err
	}
	return publicRecord(t, &rec), nil
}

// publicRecord converts a stored record to its public form.
func publicRecord(t *model.Table, rec *codec.Record) *Record {
	return ownedPublicRecord(t, rec.Clone())
}

// ownedPublicRecord is publicRecord of a record nobody else holds, which
// the result keeps.
func ownedPublicRecord(t *model.Table, rec *codec.Record) *Record {
	out := &Record{
		stored: rec,
		ID:     rec.ID, Version: rec.Version,
		CreatedAt: time.Unix(0, rec.CreatedAt).UTC(), UpdatedAt: time.Unix(0, rec.UpdatedAt).UTC(),
		Values: make(map[string]any, len(rec.Fields)),
	}
	for _, f := range rec.Fields {
		c := t.ByID[f.Col]
		if c == nil {
			continue // a deleted column
		}
		index.SetPath(out.Values, c.Path, model.FromValue(c, f.Val))
	}
	return out
}
