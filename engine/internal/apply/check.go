package apply

import (
	"errors"
	"strings"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// The checks a write passes before its command is made: the ids of its
// operations, and each operation against the schema alone, so that a
// transaction reports every operation that cannot run. Applying the
// command checks again, against the records.

// ResolveID checks the id of one operation, taking it from the body or,
// when gen is not nil, from gen for an insert without one.
func ResolveID(op *model.Op, gen func() string) *model.Error {
	if op.Values != nil {
		if v, ok := op.Values["id"]; ok {
			s, isStr := v.(string)
			if !isStr {
				return model.Invalidf("id must be a string")
			}
			if op.ID == "" && op.Kind == model.OpInsert {
				op.ID = s
			} else if s != op.ID {
				return model.Invalidf("id [%s] in the body does not match the record id [%s]", s, op.ID)
			}
		}
	}
	if op.ID == "" {
		if op.Kind != model.OpInsert {
			return model.Invalidf("record id is required")
		}
		if gen != nil {
			op.ID = gen()
		}
		return nil
	}
	return model.RecordIDError(op.ID)
}

// OpError names the table in an error of a transaction's operation, as
// applying it does; errors of bulk inserts (bulk) and single-record
// writes stay as they are.
func OpError(op *model.Op, err *model.Error, bulk bool) *model.Error {
	if op.MissingNotFound || bulk || strings.HasPrefix(err.Message, "table [") {
		return err
	}
	return &model.Error{Code: err.Code, Message: "table [" + op.Table + "]: " + err.Message}
}

// CheckOp checks one operation against schema s, as applying it would
// without the records. Its errors read as applying's do.
func CheckOp(s *model.Schema, op *model.Op, bulk bool) *model.Error {
	t, err := s.Table(op.Table)
	if err != nil {
		return err.(*model.Error)
	}
	if ee := ResolveID(op, nil); ee != nil {
		return OpError(op, ee, bulk)
	}
	var ee *model.Error
	if !op.MissingNotFound && errors.As(model.CheckNoFiles(t, op.Values), &ee) {
		return ee // named without the table, as in bulk inserts
	}
	// Filling a scratch record checks every value; without a transaction
	// the writer leaves link targets alone, which earlier operations of
	// the same request may still create.
	w := &writer{now: time.Unix(0, 0)}
	var werr error
	switch op.Kind {
	case model.OpInsert:
		werr = w.fill(t, &codec.Record{}, op.Values, true, false)
	case model.OpUpdate:
		// An upsert may insert, but whether it does depends on the records.
		werr = w.fill(t, &codec.Record{}, op.Values, false, true)
	}
	if errors.As(werr, &ee) {
		return OpError(op, ee, bulk)
	}
	return nil
}
