package engine

import "github.com/coppice-db/coppice/engine/internal/model"

// The engine's vocabulary is defined in its data model (internal/model),
// which every part of the engine shares; these are its public names.

// Code classifies an engine error; see model.Code.
type Code = model.Code

// The closed set of error codes.
const (
	CodeInternal        = model.CodeInternal
	CodeInvalid         = model.CodeInvalid
	CodeNotFound        = model.CodeNotFound
	CodeAlreadyExists   = model.CodeAlreadyExists
	CodePrecondition    = model.CodePrecondition
	CodeConflict        = model.CodeConflict
	CodeLocked          = model.CodeLocked
	CodeUnauthenticated = model.CodeUnauthenticated
	CodeForbidden       = model.CodeForbidden
	CodeUnsupported     = model.CodeUnsupported
	CodeUnavailable     = model.CodeUnavailable
)

// Error is the error of an operation that fails for a reason a caller can
// act on; any other error is internal.
type Error = model.Error

// OpError is the failure of one operation of a bulk insert or transaction.
type OpError = model.OpError

// OpErrors reports the failed operations of a bulk insert or transaction.
type OpErrors = model.OpErrors

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error { return model.Errorf(code, format, args...) }

// CodeOf returns the code of err: the code of the first *Error in its
// chain, or CodeInternal.
func CodeOf(err error) Code { return model.CodeOf(err) }

// ColumnType is the type of a column (spec §2.3, plus json from the
// compat API).
type ColumnType = model.ColumnType

// Column types.
const (
	TypeBool      = model.TypeBool
	TypeInt       = model.TypeInt
	TypeFloat     = model.TypeFloat
	TypeString    = model.TypeString
	TypeText      = model.TypeText
	TypeEmail     = model.TypeEmail
	TypeMultiple  = model.TypeMultiple
	TypeLink      = model.TypeLink
	TypeObject    = model.TypeObject
	TypeDatetime  = model.TypeDatetime
	TypeVector    = model.TypeVector
	TypeFile      = model.TypeFile
	TypeFileArray = model.TypeFileArray
	TypeJSON      = model.TypeJSON
)

// Schemas as the API reads and writes them.
type (
	// ColumnDef is the public shape of a column.
	ColumnDef = model.ColumnDef
	// LinkDef names the table a link column points to.
	LinkDef = model.LinkDef
	// VectorDef is the dimension of a vector column.
	VectorDef = model.VectorDef
	// FileDef holds the settings of file and file[] columns.
	FileDef = model.FileDef
	// RevLink is one link column, in any table, that points at a table.
	RevLink = model.RevLink
	// TableDef is the public shape of a table in branch details.
	TableDef = model.TableDef
	// SchemaDef is the public schema of a branch.
	SchemaDef = model.SchemaDef
)

// CheckRecordID enforces the RecordID rule of spec §2.1.
func CheckRecordID(id string) error { return model.CheckRecordID(id) }

// Branches.
type (
	// BranchMetadata is the free-form metadata of a branch (spec §2.7).
	BranchMetadata = model.BranchMetadata
	// StartedFrom tells which branch, and at which migration, a branch
	// was created from.
	StartedFrom = model.StartedFrom
)

// Schema changes.
type (
	// MigrationOp is one schema operation of a migration.
	MigrationOp = model.MigrationOp
	// TableOp names the table of addTable and removeTable.
	TableOp = model.TableOp
	// RenameTableOp renames a table.
	RenameTableOp = model.RenameTableOp
	// AddColumnOp adds a column to a table.
	AddColumnOp = model.AddColumnOp
	// RemoveColumnOp removes a column.
	RemoveColumnOp = model.RemoveColumnOp
	// RenameColumnOp renames a column.
	RenameColumnOp = model.RenameColumnOp
	// Migration is one recorded schema change of a branch.
	Migration = model.Migration
	// SchemaChange is the result of a schema change.
	SchemaChange = model.SchemaChange
)

// OpKind is the kind of one write operation.
type OpKind = model.OpKind

// Operation kinds.
const (
	OpInsert = model.OpInsert
	OpUpdate = model.OpUpdate
	OpDelete = model.OpDelete
	OpGet    = model.OpGet
)

// Op is one operation of a transaction, bulk insert or single write.
type Op = model.Op

// Values of records.
type (
	// Link is an un-expanded link value: the id of the linked record.
	Link = model.Link
	// JSONText is the value of a json column.
	JSONText = model.JSONText
	// File is a file as records and the file endpoints return it.
	File = model.File
	// FileTarget selects a file of a record for the file endpoints.
	FileTarget = model.FileTarget
)

// MaxFileBytes is the largest content of one file.
const MaxFileBytes = model.MaxFileBytes

// EventKind names what an Event reports.
type EventKind = model.EventKind

// The kinds of Event.
const (
	EventFlush      = model.EventFlush
	EventCompaction = model.EventCompaction
	EventWriteStall = model.EventWriteStall
	EventStoreBuild = model.EventStoreBuild
	EventEviction   = model.EventEviction
	EventFlatten    = model.EventFlatten
	// EventIdleCompaction is a table's key ranges compacted after its bulk
	// writes went idle, or the store compacted once idle after opening
	// with files above its bottom level (Options.CompactIdle).
	EventIdleCompaction = model.EventIdleCompaction
)

// Event reports one piece of work the engine did on its own, for metrics.
type Event = model.Event
