package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// Transaction operation bodies (compat-api.md §4.1). Unknown keys are
// invalid; null is the same as absent.
type (
	txInsert struct {
		Table      string         `json:"table"`
		Record     map[string]any `json:"record"`
		CreateOnly *bool          `json:"createOnly"`
		IfVersion  *uint64        `json:"ifVersion"`
		Columns    *[]string      `json:"columns"`
	}
	txUpdate struct {
		Table     string         `json:"table"`
		ID        string         `json:"id"`
		Fields    map[string]any `json:"fields"`
		IfVersion *uint64        `json:"ifVersion"`
		Upsert    *bool          `json:"upsert"`
		Columns   *[]string      `json:"columns"`
	}
	txDelete struct {
		Table         string    `json:"table"`
		ID            string    `json:"id"`
		FailIfMissing *bool     `json:"failIfMissing"`
		Columns       *[]string `json:"columns"`
	}
	txGet struct {
		Table   string    `json:"table"`
		ID      string    `json:"id"`
		Columns *[]string `json:"columns"`
	}
)

// txPlan is what rendering the result of one operation needs.
type txPlan struct {
	op         engine.Op
	explicitID bool // an insert that named its id
	// columns is the op's `columns` as a JSON array; nil without them.
	columns json.RawMessage
	// bare marks `"columns": []`, no projection: a get answers only the id
	// and the metadata, a write no columns at all (columns stays nil).
	bare bool
}

// transaction: POST /db/{dbb}/transaction. Every operation is validated
// first and all invalid ones are reported; then the operations run as one
// atomic write that stops at the first failure.
func (s *Server) transaction(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	var raw []json.RawMessage
	present, err := r.decodeListBody("operations", func(d *json.Decoder) error {
		var op json.RawMessage
		if err := d.Decode(&op); err != nil {
			return jsonError(err)
		}
		raw = append(raw, op)
		return nil
	})
	if err != nil {
		return err
	}
	if !present {
		return invalid("operations is required")
	}
	if len(raw) > engine.MaxTransactionOp {
		return invalid("a transaction holds at most %d operations, got %d", engine.MaxTransactionOp, len(raw))
	}
	if _, err := s.eng.Branches().Details(ref.Ref); err != nil {
		return err // a missing database or branch fails the whole request
	}
	plans := make([]txPlan, len(raw))
	var invalidOps []engine.OpError
	// parsed maps the operations that parsed to their index in the request.
	var parsed []int
	for i, m := range raw {
		p, err := s.parseTxOp(ref.Ref, m)
		if err != nil {
			invalidOps = append(invalidOps, engine.OpError{Index: i, Err: &engine.Error{Message: errorMessage(err)}})
			continue
		}
		plans[i] = p
		parsed = append(parsed, i)
	}
	if invalidOps != nil {
		// Name the operations that parsed but cannot run as well.
		ops := make([]engine.Op, len(parsed))
		for j, i := range parsed {
			ops[j] = plans[i].op
		}
		var oe *engine.OpErrors
		if err := s.eng.CheckOps(ref.Ref, ops); errors.As(err, &oe) {
			for _, e := range oe.Errors {
				invalidOps = append(invalidOps, engine.OpError{Index: parsed[e.Index], Err: e.Err})
			}
		} else if err != nil {
			return err
		}
		return txError(r, invalidOps)
	}
	ops := make([]engine.Op, len(plans))
	for i := range plans {
		ops[i] = plans[i].op
	}
	results, err := s.eng.Write(s.writeContext(r, r.context()), ref.Ref, ops)
	var oe *engine.OpErrors
	if errors.As(err, &oe) {
		return txError(r, oe.Errors)
	}
	if err != nil {
		return err
	}
	out, err := s.txResults(ref.Ref, plans, results)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"results": out})
	return nil
}

// txError is the failure body of a transaction: the failed operations in
// request order.
func txError(r *request, errs []engine.OpError) error {
	sort.Slice(errs, func(i, j int) bool { return errs[i].Index < errs[j].Index })
	list := make([]any, len(errs))
	for i, e := range errs {
		list[i] = map[string]any{"index": e.Index, "message": e.Err.Message}
	}
	return &bodyError{status: http.StatusBadRequest, body: map[string]any{"id": r.requestID(), "errors": list}}
}

// errorMessage is the message of an engine error, without the prefix that
// whole-body decoding errors carry.
func errorMessage(err error) string {
	var ee *engine.Error
	if errors.As(err, &ee) {
		return strings.TrimPrefix(ee.Message, "invalid JSON body: ")
	}
	return err.Error()
}

// parseTxOp validates one operation against the schema of a branch.
func (s *Server) parseTxOp(ref engine.Ref, m json.RawMessage) (txPlan, error) {
	var wrapper map[string]json.RawMessage
	if err := decodeStrict(m, &wrapper); err != nil || wrapper == nil {
		return txPlan{}, invalid("an operation must be an object with one of insert, update, delete or get")
	}
	if len(wrapper) != 1 {
		return txPlan{}, invalid("an operation must have exactly one of insert, update, delete or get")
	}
	var p txPlan
	var columns *[]string
	for kind, body := range wrapper {
		switch kind {
		case "insert":
			var x txInsert
			if err := decodeStrict(body, &x); err != nil {
				return p, prefixed("insert", err)
			}
			if x.Record == nil {
				return p, invalid("insert: record is required")
			}
			p.op = engine.Op{Kind: engine.OpInsert, Table: x.Table, Values: x.Record, IfVersion: x.IfVersion}
			p.op.CreateOnly = x.CreateOnly != nil && *x.CreateOnly
			dropNullID(x.Record)
			if v, ok := x.Record["id"]; ok {
				id, isStr := v.(string)
				if !isStr {
					return p, invalid("insert: record id must be a string")
				}
				p.op.ID, p.explicitID = id, true
			}
			if x.IfVersion != nil && !p.explicitID {
				return p, invalid("insert: ifVersion needs an explicit record id")
			}
			columns = x.Columns
		case "update":
			var x txUpdate
			if err := decodeStrict(body, &x); err != nil {
				return p, prefixed("update", err)
			}
			if x.Fields == nil {
				return p, invalid("update: fields is required")
			}
			p.op = engine.Op{Kind: engine.OpUpdate, Table: x.Table, ID: x.ID, Values: x.Fields, IfVersion: x.IfVersion}
			p.op.Upsert = x.Upsert != nil && *x.Upsert
			columns = x.Columns
		case "delete":
			var x txDelete
			if err := decodeStrict(body, &x); err != nil {
				return p, prefixed("delete", err)
			}
			p.op = engine.Op{Kind: engine.OpDelete, Table: x.Table, ID: x.ID}
			p.op.FailIfMissing = x.FailIfMissing != nil && *x.FailIfMissing
			columns = x.Columns
		case "get":
			var x txGet
			if err := decodeStrict(body, &x); err != nil {
				return p, prefixed("get", err)
			}
			p.op = engine.Op{Kind: engine.OpGet, Table: x.Table, ID: x.ID}
			columns = x.Columns
		default:
			return p, invalid("unknown operation [%s]: use insert, update, delete or get", kind)
		}
	}
	if p.op.Table == "" {
		return p, invalid("table is required")
	}
	if err := s.eng.CheckColumns(ref, p.op.Table, index.Columns{}); err != nil {
		return p, err // the table does not exist
	}
	if p.op.Kind != engine.OpInsert && p.op.ID == "" {
		return p, invalid("table [%s]: id is required", p.op.Table)
	}
	if p.op.ID != "" {
		if err := engine.CheckRecordID(p.op.ID); err != nil {
			return p, invalid("table [%s]: %s", p.op.Table, errorMessage(err))
		}
	}
	switch {
	case columns == nil:
	case len(*columns) == 0:
		p.bare = true
		if p.op.Kind == engine.OpGet {
			p.columns = json.RawMessage("[]")
		}
	default:
		p.columns = columnsJSON(*columns)
		if err := s.eng.CheckColumns(ref, p.op.Table, index.ColumnNames(*columns)); err != nil {
			return p, invalid("table [%s]: %s", p.op.Table, errorMessage(err))
		}
	}
	return p, nil
}

// prefixed names the operation kind in a validation error.
func prefixed(kind string, err error) error {
	return invalid("%s: %s", kind, errorMessage(err))
}

// txResults renders the results of a transaction with the exact key sets
// of compat-api.md §4.3. Records are projected in one engine call per table
// and columns list.
func (s *Server) txResults(ref engine.Ref, plans []txPlan, results []engine.OpResult) ([]map[string]any, error) {
	// columns[i] is the `columns` object of result i, when it has one.
	columns := make([]map[string]any, len(results))
	type group struct {
		table   string
		columns string
	}
	var order []group
	members := map[group][]int{}
	for i, res := range results {
		p := &plans[i]
		// Writes render a record only with columns; a get always does.
		if res.Record == nil || p.columns == nil && p.op.Kind != engine.OpGet {
			continue
		}
		g := group{p.op.Table, string(p.columns)}
		if _, ok := members[g]; !ok {
			order = append(order, g)
		}
		members[g] = append(members[g], i)
	}
	for _, g := range order {
		idx := members[g]
		recs := make([]*engine.Record, len(idx))
		for j, i := range idx {
			recs[j] = results[i].Record
		}
		var cols json.RawMessage
		if g.columns != "" {
			cols = json.RawMessage(g.columns)
		}
		list, err := index.ReadColumns(cols)
		if err != nil {
			return nil, err
		}
		docs, err := s.project(ref, g.table, recs, list)
		if err != nil {
			return nil, err
		}
		withID := namesID(cols)
		for j, i := range idx {
			if cols == nil || plans[i].bare {
				// A get without columns: the full record with id and
				// metadata; with an empty list, only those two.
				columns[i] = s.renderDoc(docs[j])
				continue
			}
			// Only the requested keys: id only when named, never the
			// metadata.
			c := s.renderValues(docs[j].Values)
			if withID {
				c["id"] = docs[j].ID
			}
			columns[i] = c
		}
	}
	out := make([]map[string]any, len(results))
	for i, res := range results {
		p := &plans[i]
		c := columns[i]
		if c == nil {
			c = map[string]any{}
		}
		switch p.op.Kind {
		case engine.OpInsert:
			o := map[string]any{"operation": "insert", "id": res.ID, "rows": res.Rows}
			if p.columns != nil || p.explicitID && !p.op.CreateOnly && !p.bare {
				o["columns"] = c
			}
			out[i] = o
		case engine.OpUpdate:
			o := map[string]any{"operation": "update", "id": res.ID, "rows": res.Rows}
			if !p.bare {
				o["columns"] = c
			}
			out[i] = o
		case engine.OpDelete:
			o := map[string]any{"operation": "delete", "rows": res.Rows}
			if p.columns != nil {
				o["columns"] = c
			}
			out[i] = o
		default: // engine.OpGet
			out[i] = map[string]any{"operation": "get", "columns": c}
		}
	}
	return out, nil
}
