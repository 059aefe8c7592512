package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// The naive model of TestBranchModel: every branch a full copy of its
// records in plain maps, and operations applied to it as the spec says,
// with none of the engine's layers, bitmaps or stores.

// modelRecord is the model's copy of a record. Stored records are never
// modified, so branches of the model may share them.
type modelRecord struct {
	version          uint64
	created, updated int64
	// values holds the non-null columns in their output types: string,
	// int64, float64 or []string.
	values map[string]any
}

// modelBranch is the content of one branch: table → record id → record.
type modelBranch map[string]map[string]*modelRecord

func newModelBranch() modelBranch {
	m := modelBranch{}
	for _, tn := range testTables {
		m[tn] = map[string]*modelRecord{}
	}
	return m
}

func (m modelBranch) clone() modelBranch {
	out := modelBranch{}
	for tn, recs := range m {
		c := make(map[string]*modelRecord, len(recs))
		for id, r := range recs {
			c[id] = r
		}
		out[tn] = c
	}
	return out
}

// sortedIDs returns the record ids of a table in order, so that random
// choices do not depend on map order.
func (m modelBranch) sortedIDs(table string) []string {
	ids := make([]string, 0, len(m[table]))
	for id := range m[table] {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// modelResult is what the model expects of one operation.
type modelResult struct {
	failed  bool
	code    Code
	rows    int
	created bool
	rec     *modelRecord
}

func modelFail(code Code) modelResult { return modelResult{failed: true, code: code} }

// modelNormalize converts an input value of a test column to its output type.
func modelNormalize(col string, v any) any {
	switch col {
	case "n":
		switch n := v.(type) {
		case json.Number:
			i, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil {
				panic(err)
			}
			return i
		case int:
			return int64(n)
		case int64:
			return n
		case float64:
			return int64(n)
		}
	case "score":
		switch f := v.(type) {
		case json.Number:
			x, err := strconv.ParseFloat(string(f), 64)
			if err != nil {
				panic(err)
			}
			return x
		case float64:
			return f
		case int:
			return float64(f)
		}
	case "tags":
		out := []string{}
		switch l := v.(type) {
		case []string:
			out = append(out, l...)
		case []any:
			for _, x := range l {
				out = append(out, x.(string))
			}
		}
		return out
	default:
		return v.(string)
	}
	panic(fmt.Sprintf("model: unexpected value %T for column %s", v, col))
}

// modelNumeric applies a $increment or $decrement to the current value of a
// number column.
func modelNumeric(col string, cur any, ops map[string]any) any {
	var name string
	var arg any
	for name, arg = range ops {
	}
	switch col {
	case "n":
		a, _ := cur.(int64)
		b := modelNormalize("n", arg).(int64)
		if name == "$decrement" {
			return a - b
		}
		return a + b
	case "score":
		a, _ := cur.(float64)
		b := modelNormalize("score", arg).(float64)
		if name == "$decrement" {
			return a - b
		}
		return a + b
	}
	panic("model: numeric operator on column " + col)
}

// modelFill builds the values of a record from input values: full replaces
// the record, otherwise only the named columns change. numOps allows the
// numeric operators (updates and upserts); ok is false when the input uses
// them anyway.
func modelFill(old map[string]any, in map[string]any, full, numOps bool) (map[string]any, bool) {
	out := map[string]any{}
	if !full {
		for k, v := range old {
			out[k] = v
		}
	}
	for k, v := range in {
		if k == "id" {
			continue
		}
		switch x := v.(type) {
		case nil:
			delete(out, k)
		case map[string]any:
			if !numOps {
				return nil, false
			}
			out[k] = modelNumeric(k, out[k], x)
		default:
			out[k] = modelNormalize(k, v)
		}
	}
	return out, true
}

// modelInvalid reports whether an operation fails against the schema
// alone, whatever the records: of what genOp makes, only a numeric operator
// in an insert does.
func modelInvalid(op *Op) bool {
	if op.Kind != OpInsert {
		return false
	}
	for _, v := range op.Values {
		if _, ok := v.(map[string]any); ok {
			return true
		}
	}
	return false
}

// modelApply applies one operation, whose id is resolved, to the tables of
// a branch, as the engine's writer does.
func modelApply(br modelBranch, op *Op, now int64) modelResult {
	recs := br[op.Table]
	old := recs[op.ID]
	versionOK := op.IfVersion == nil || (old != nil && old.version == *op.IfVersion)
	unique := func(vals map[string]any) bool {
		code, ok := vals["code"]
		if !ok {
			return true
		}
		if old != nil && old.values["code"] == code {
			return true
		}
		for id, r := range recs {
			if id != op.ID && r.values["code"] == code {
				return false
			}
		}
		return true
	}
	create := func(numOps bool) modelResult {
		vals, ok := modelFill(nil, op.Values, true, numOps)
		if !ok {
			return modelFail(CodeInvalid)
		}
		if !unique(vals) {
			return modelFail(CodeInvalid)
		}
		r := &modelRecord{created: now, updated: now, values: vals}
		recs[op.ID] = r
		return modelResult{rows: 1, created: true, rec: r}
	}
	switch op.Kind {
	case OpGet:
		if old == nil {
			return modelResult{}
		}
		return modelResult{rows: 1, rec: old}
	case OpDelete:
		if old == nil {
			switch {
			case op.MissingNotFound:
				return modelFail(CodeNotFound)
			case op.FailIfMissing:
				return modelFail(CodeInvalid)
			}
			return modelResult{}
		}
		if !versionOK {
			return modelFail(CodePrecondition)
		}
		delete(recs, op.ID)
		return modelResult{rows: 1, rec: old}
	case OpInsert:
		if old != nil && op.CreateOnly {
			return modelFail(CodeAlreadyExists)
		}
		if !versionOK {
			return modelFail(CodePrecondition)
		}
		if old == nil {
			return create(false)
		}
		vals, ok := modelFill(nil, op.Values, true, false)
		if !ok {
			return modelFail(CodeInvalid)
		}
		if !unique(vals) {
			return modelFail(CodeInvalid)
		}
		r := &modelRecord{version: old.version + 1, created: old.created, updated: now, values: vals}
		recs[op.ID] = r
		return modelResult{rows: 1, rec: r}
	case OpUpdate:
		if old == nil {
			if !op.Upsert {
				return modelFail(CodeNotFound)
			}
			// An upsert that inserts applies numeric operators to null.
			return create(true)
		}
		if !versionOK {
			return modelFail(CodePrecondition)
		}
		vals, ok := modelFill(old.values, op.Values, false, true)
		if !ok {
			return modelFail(CodeInvalid)
		}
		if !unique(vals) {
			return modelFail(CodeInvalid)
		}
		r := &modelRecord{version: old.version + 1, created: old.created, updated: now, values: vals}
		recs[op.ID] = r
		return modelResult{rows: 1, rec: r}
	}
	panic("model: unknown operation")
}

// diffRecord describes how an engine record differs from the model's, or
// returns "" when they agree.
func diffRecord(got *Record, id string, want *modelRecord) string {
	switch {
	case got == nil && want == nil:
		return ""
	case got == nil:
		return fmt.Sprintf("record %s missing, want v%d %v", id, want.version, want.values)
	case want == nil:
		return fmt.Sprintf("record %s = v%d %v, want none", id, got.Version, got.Values)
	}
	var d []string
	if got.ID != id {
		d = append(d, fmt.Sprintf("id %q, want %q", got.ID, id))
	}
	if got.Version != want.version {
		d = append(d, fmt.Sprintf("version %d, want %d", got.Version, want.version))
	}
	if got.CreatedAt.UnixNano() != want.created {
		d = append(d, fmt.Sprintf("createdAt %d, want %d", got.CreatedAt.UnixNano(), want.created))
	}
	if got.UpdatedAt.UnixNano() != want.updated {
		d = append(d, fmt.Sprintf("updatedAt %d, want %d", got.UpdatedAt.UnixNano(), want.updated))
	}
	if !reflect.DeepEqual(got.Values, want.values) {
		d = append(d, fmt.Sprintf("values %v, want %v", got.Values, want.values))
	}
	if len(d) == 0 {
		return ""
	}
	return "record " + id + ": " + strings.Join(d, "; ")
}
