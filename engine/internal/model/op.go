package model

// OpKind is the kind of one write operation.
type OpKind uint8

// Operation kinds. Every record write of the API is one of these.
const (
	// OpInsert inserts a record; with an ID that exists it replaces it,
	// unless CreateOnly.
	OpInsert OpKind = iota + 1
	// OpUpdate changes the named columns of an existing record; with Upsert
	// it inserts a missing one.
	OpUpdate
	// OpDelete deletes a record.
	OpDelete
	// OpGet reads a record inside a transaction.
	OpGet
)

// Op is one operation of a transaction, bulk insert or single write.
type Op struct {
	Kind  OpKind
	Table string
	// ID is the record id; empty on an insert means a generated one (the
	// record may also carry "id" in Values).
	ID     string
	Values map[string]any
	// CreateOnly makes an insert of an existing id fail.
	CreateOnly bool
	// IfVersion makes the write conditional on the current version.
	IfVersion *uint64
	// Upsert makes an update of a missing record an insert.
	Upsert bool
	// FailIfMissing makes a delete of a missing record fail.
	FailIfMissing bool
	// MissingNotFound makes an update or delete of a missing record a
	// not-found error (single-record endpoints) rather than an operation
	// failure (transactions).
	MissingNotFound bool
}
