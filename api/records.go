package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// recordCall is the common part of the single-record and bulk endpoints:
// the resolved table and the `columns` selection.
type recordCall struct {
	ref   dbRef
	table string
	// columns is the `columns` parameter; zero when absent.
	columns index.Columns
}

// recordCall resolves the table and checks `columns` against the schema
// before anything is written, so a bad column list changes nothing.
func (r *request) recordCall() (recordCall, error) {
	ref, table, err := r.tableRef()
	if err != nil {
		return recordCall{}, err
	}
	c := recordCall{ref: ref, table: table, columns: index.ColumnNames(r.columns())}
	if !c.columns.IsZero() {
		if err := r.s.eng.CheckColumns(ref.Ref, table, c.columns); err != nil {
			return recordCall{}, err
		}
	}
	return c, nil
}

// recordID returns the {id} path parameter.
func (r *request) recordID() (string, error) { return r.param("id") }

// projected renders records of the call's table through its `columns`
// (every column when absent), each with id and metadata.
func (r *request) projected(c *recordCall, recs ...*engine.Record) ([]*engine.Doc, error) {
	return r.s.project(c.ref.Ref, c.table, recs, c.columns)
}

// writeProjected answers with one record projected by the call's columns.
func (r *request) writeProjected(c *recordCall, status int, rec *engine.Record) error {
	out, err := r.projected(c, rec)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, status, rawJSON(r.s.appendDoc(nil, out[0])))
	return nil
}

// writeDocs answers {"records": [...]}.
func (r *request) writeDocs(status int, docs []*engine.Doc) {
	b := append(make([]byte, 0, 256*len(docs)), `{"records":[`...)
	for i, d := range docs {
		if i > 0 {
			b = append(b, ',')
		}
		b = r.s.appendDoc(b, d)
	}
	writeJSON(r.ctx, status, rawJSON(append(b, "]}"...)))
}

// writeResult answers a write: {id, meta} without `columns`, else the
// projected record after the write (compat-api.md §3.3).
func (r *request) writeResult(c *recordCall, status int, res engine.OpResult) error {
	rec := res.Record
	if rec == nil {
		return errors.New("api: write returned no record")
	}
	if c.columns.IsZero() {
		// {"id", meta}: both metadata keys sort after "id".
		b := append(make([]byte, 0, 128), `{"id":`...)
		b = appendString(b, rec.ID)
		b = append(b, ',')
		b = appendString(b, r.s.meta)
		b = append(b, ':')
		b = appendMeta(b, rec.Version, rec.CreatedAt, rec.UpdatedAt)
		writeJSON(r.ctx, status, rawJSON(append(b, '}')))
		return nil
	}
	return r.writeProjected(c, status, rec)
}

// insertRecord: POST T/data, a record with a generated id.
func (s *Server) insertRecord(r *request) error {
	c, err := r.recordCall()
	if err != nil {
		return err
	}
	values, err := r.recordBody()
	if err != nil {
		return err
	}
	if _, ok := values["id"]; ok {
		return invalid("id must not be set in the body of POST data; use PUT data/{id}")
	}
	res, err := s.eng.WriteOneContext(s.writeContext(r, context.Background()), c.ref.Ref,
		engine.Op{Kind: engine.OpInsert, Table: c.table, Values: values, CreateOnly: true})
	if err != nil {
		return err
	}
	return r.writeResult(&c, http.StatusCreated, res)
}

// putRecord: PUT T/data/{id}, insert (201) or full replace (200);
// createOnly=true refuses to replace, ifVersion conditions the write.
func (s *Server) putRecord(r *request) error {
	return s.writeByID(r, engine.Op{Kind: engine.OpInsert}, true)
}

// updateRecord: PATCH T/data/{id}, a partial update of an existing record.
func (s *Server) updateRecord(r *request) error {
	return s.writeByID(r, engine.Op{Kind: engine.OpUpdate}, false)
}

// upsertRecord: POST T/data/{id}, insert (201) or partial update (200).
func (s *Server) upsertRecord(r *request) error {
	return s.writeByID(r, engine.Op{Kind: engine.OpUpdate, Upsert: true}, false)
}

// writeByID is PUT, PATCH and POST data/{id}: op carries the kind; the id,
// ifVersion, createOnly (PUT only) and values come from the request. A
// write that created the record answers 201, else 200.
func (s *Server) writeByID(r *request, op engine.Op, createOnly bool) error {
	c, err := r.recordCall()
	if err != nil {
		return err
	}
	if op.ID, err = r.recordID(); err != nil {
		return err
	}
	if createOnly {
		if op.CreateOnly, err = r.queryBool("createOnly"); err != nil {
			return err
		}
	}
	if op.IfVersion, err = r.queryVersion(); err != nil {
		return err
	}
	if op.Values, err = r.recordBody(); err != nil {
		return err
	}
	op.Table = c.table
	res, err := s.eng.WriteOneContext(s.writeContext(r, context.Background()), c.ref.Ref, op)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return r.writeResult(&c, status, res)
}

// getRecord: GET T/data/{id}; ?consistency=eventual reads a cluster
// node's replica as it is (cluster.go).
func (s *Server) getRecord(r *request) error {
	if err := r.queryConsistency(); err != nil {
		return err
	}
	c, err := r.recordCall()
	if err != nil {
		return err
	}
	if c.columns.IsZero() {
		// Every column: the stored record, encoded by WriteView straight
		// from the engine's read.
		if r.rawID != nil {
			return s.eng.ReadViewBytes(s.records, c.ref.Ref, c.table, r.rawID, r)
		}
		id, err := r.recordID()
		if err != nil {
			return err
		}
		return s.eng.ReadView(s.records, c.ref.Ref, c.table, id, r)
	}
	id, err := r.recordID()
	if err != nil {
		return err
	}
	rec, err := s.eng.Get(c.ref.Ref, c.table, id)
	if err != nil {
		return err
	}
	return r.writeProjected(&c, http.StatusOK, rec)
}

// WriteView answers a point read with every column with the record's
// view: encoded by appendView, or kept with the view while the engine's
// cache holds it (engine.ViewWriter).
func (r *request) WriteView(v *engine.RecordView) error {
	s := r.s
	b := responseBody(r.ctx)
	if s.encoded != nil && v.Cached() {
		b = s.encoded.appendEncoding(b, v, s.appendView)
	} else {
		b = s.appendView(b, v)
	}
	writeBody(r.ctx, http.StatusOK, b)
	return nil
}

// deleteRecord: DELETE T/data/{id}; 204, or with `columns` 200 and the
// record as it was before the delete.
func (s *Server) deleteRecord(r *request) error {
	c, err := r.recordCall()
	if err != nil {
		return err
	}
	id, err := r.recordID()
	if err != nil {
		return err
	}
	res, err := s.eng.WriteOneContext(s.writeContext(r, context.Background()), c.ref.Ref, engine.Op{Kind: engine.OpDelete, Table: c.table, ID: id})
	if err != nil {
		return err
	}
	if c.columns.IsZero() || res.Record == nil {
		writeJSON(r.ctx, http.StatusNoContent, nil)
		return nil
	}
	return r.writeProjected(&c, http.StatusOK, res.Record)
}

// bulkInsert: POST T/bulk, up to engine.MaxBulkRecords records in one batch,
// all or nothing. Failures list every failing record as {message, status}.
func (s *Server) bulkInsert(r *request) error {
	c, err := r.recordCall()
	if err != nil {
		return err
	}
	if c.columns.IsZero() {
		// Without columns the table is not checked yet: a missing table or
		// branch is a plain 404, not a per-record error.
		if err := s.eng.CheckColumns(c.ref.Ref, c.table, index.Columns{}); err != nil {
			return err
		}
	}
	records, err := s.bulkRecords(r)
	if err != nil {
		return err
	}
	if len(records) > engine.MaxBulkRecords {
		return invalid("bulk insert takes at most %d records, got %d", engine.MaxBulkRecords, len(records))
	}
	var nullErrs []any
	for i, rec := range records {
		dropNullID(rec)
		if rec == nil {
			nullErrs = append(nullErrs, map[string]any{
				"message": "record " + strconv.Itoa(i) + ": expected an object of column values", "status": http.StatusBadRequest,
			})
		}
	}
	if nullErrs != nil {
		return &bodyError{status: http.StatusBadRequest, body: map[string]any{"errors": nullErrs}}
	}
	wctx := engine.OnPrepareYield(s.writeContext(r, r.context()), func() { _ = s.bulkYield(r) })
	wctx = engine.OnWriterYield(wctx, s.bulk.nudge)
	res, err := s.eng.BulkInsert(wctx, c.ref.Ref, c.table, records)
	var oe *engine.OpErrors
	if errors.As(err, &oe) {
		return bulkError(oe)
	}
	if err != nil {
		return err
	}
	if c.columns.IsZero() {
		ids := make([]string, len(res))
		for i, x := range res {
			ids[i] = x.ID
		}
		writeJSON(r.ctx, http.StatusOK, map[string]any{"recordIDs": ids})
		return nil
	}
	recs := make([]*engine.Record, len(res))
	for i, x := range res {
		recs[i] = x.Record
	}
	out, err := r.projected(&c, recs...)
	if err != nil {
		return err
	}
	r.writeDocs(http.StatusOK, out)
	return nil
}

// bulkRecords decodes the records of a bulk body, one at a time, giving
// up the bulk turn between records when others wait (bulkYield). The scan
// reads plain bodies; encoding/json reads the others and names what is
// wrong with them.
func (s *Server) bulkRecords(r *request) ([]map[string]any, error) {
	var records []map[string]any
	add := func(rec map[string]any) error {
		records = append(records, rec)
		return s.bulkYield(r)
	}
	if ok, err := scanRecordList(r.body(), "records", add); ok {
		return records, err
	}
	clear(records)
	records = records[:0]
	present, err := r.decodeListBody("records", func(d *json.Decoder) error {
		rec, err := decodeRecord(d)
		if err != nil {
			return err
		}
		return add(rec)
	})
	if err == nil && !present {
		err = invalid("records is required")
	}
	return records, err
}

// decodeRecord decodes the next record of a bulk body from d.
func decodeRecord(d *json.Decoder) (map[string]any, error) {
	var rec map[string]any
	if err := d.Decode(&rec); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, invalid("invalid JSON body: field [records] must be an object, got %s", te.Value)
		}
		return nil, jsonError(err)
	}
	return rec, nil
}

// bulkError is the bulk failure body. The status is the one all failures
// share, else 400.
func bulkError(oe *engine.OpErrors) error {
	status := 0
	list := make([]any, 0, len(oe.Errors))
	for _, e := range oe.Errors {
		st := statusOf(e.Err.Code)
		if status == 0 {
			status = st
		} else if status != st {
			status = http.StatusBadRequest
		}
		list = append(list, map[string]any{"message": e.Err.Message, "status": st})
	}
	if status == 0 {
		status = http.StatusBadRequest
	}
	return &bodyError{status: status, body: map[string]any{"errors": list}}
}
