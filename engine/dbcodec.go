package engine

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/coppice-db/coppice/codec"
)

// The database commands and their encoding, for whatever carries them
// between copies of a database (a replicated log): a version byte, the
// command's kind, then the command as JSON. JSON of these structs is
// deterministic (fields in declaration order, map keys sorted), and record
// values decode with their numbers as json.Number, which every column
// reads exactly as the value that was encoded. A new field is added with
// a zero value that means what its absence meant; a change of meaning
// takes a new kind, and a change of layout a new version.

// dbKind numbers the database commands in their encoding; numbers are
// never reused.
type dbKind uint8

// The database commands.
const (
	dbInit dbKind = iota + 1
	dbWriteRecords
	dbCreateBranch
	dbDeleteBranch
	dbSetBranchMetadata
	dbSetGitMapping
	dbSchemaOp
	dbMigrate
	dbPushMigration
	dbSetTableColumns
	dbWriteFile
	dbStartFlatten
	dbFinishFlatten
)

func (*initDatabase) kind() dbKind      { return dbInit }
func (*writeRecords) kind() dbKind      { return dbWriteRecords }
func (*createBranch) kind() dbKind      { return dbCreateBranch }
func (*deleteBranch) kind() dbKind      { return dbDeleteBranch }
func (*setBranchMetadata) kind() dbKind { return dbSetBranchMetadata }
func (*setGitMapping) kind() dbKind     { return dbSetGitMapping }
func (*schemaOp) kind() dbKind          { return dbSchemaOp }
func (*migrate) kind() dbKind           { return dbMigrate }
func (*pushMigration) kind() dbKind     { return dbPushMigration }
func (*setTableColumns) kind() dbKind   { return dbSetTableColumns }
func (*writeFile) kind() dbKind         { return dbWriteFile }
func (*startFlatten) kind() dbKind      { return dbStartFlatten }
func (*finishFlatten) kind() dbKind     { return dbFinishFlatten }

// dbCommands makes an empty command of each kind, for decoding.
var dbCommands = map[dbKind]func() dbCommand{
	dbInit:              func() dbCommand { return new(initDatabase) },
	dbWriteRecords:      func() dbCommand { return new(writeRecords) },
	dbCreateBranch:      func() dbCommand { return new(createBranch) },
	dbDeleteBranch:      func() dbCommand { return new(deleteBranch) },
	dbSetBranchMetadata: func() dbCommand { return new(setBranchMetadata) },
	dbSetGitMapping:     func() dbCommand { return new(setGitMapping) },
	dbSchemaOp:          func() dbCommand { return new(schemaOp) },
	dbMigrate:           func() dbCommand { return new(migrate) },
	dbPushMigration:     func() dbCommand { return new(pushMigration) },
	dbSetTableColumns:   func() dbCommand { return new(setTableColumns) },
	dbWriteFile:         func() dbCommand { return new(writeFile) },
	dbStartFlatten:      func() dbCommand { return new(startFlatten) },
	dbFinishFlatten:     func() dbCommand { return new(finishFlatten) },
}

// dbCodecVersion is the version of the encoding.
const dbCodecVersion = 1

// encodeDBCommand encodes a database command.
func encodeDBCommand(cmd dbCommand) ([]byte, error) {
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	return append([]byte{dbCodecVersion, byte(cmd.kind())}, body...), nil
}

// decodeDBCommand decodes what encodeDBCommand wrote.
func decodeDBCommand(b []byte) (dbCommand, error) {
	if len(b) < 2 || b[0] != dbCodecVersion {
		return nil, fmt.Errorf("engine: database command of unknown encoding")
	}
	mk := dbCommands[dbKind(b[1])]
	if mk == nil {
		return nil, fmt.Errorf("engine: database command of unknown kind %d", b[1])
	}
	cmd := mk()
	if err := decodeExact(b[2:], cmd); err != nil {
		return nil, fmt.Errorf("engine: database command of kind %d: %w", b[1], err)
	}
	return cmd, nil
}

// decodeExact decodes one JSON value, numbers in interfaces as json.Number,
// and nothing after it.
func decodeExact(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("data after the value")
	}
	return nil
}

// wireOpResult is an opResult as encoded: the record in its stored form.
type wireOpResult struct {
	Kind    OpKind `json:"kind"`
	ID      string `json:"id"`
	Rows    int    `json:"rows,omitempty"`
	Created bool   `json:"created,omitempty"`
	Table   uint32 `json:"table"`
	Record  []byte `json:"record,omitempty"`
}

// encodeDBResult encodes the result of a database command, for the copy
// of the database that proposed it: JSON, decoded by the command's kind.
// Records go in their stored form; schema objects, which the proposer has
// in its own state, go by id.
func encodeDBResult(res any) ([]byte, error) {
	if ops, ok := res.([]opResult); ok {
		wire := make([]wireOpResult, len(ops))
		for i, r := range ops {
			wire[i] = wireOpResult{Kind: r.Kind, ID: r.ID, Rows: r.Rows, Created: r.Created, Table: r.Table}
			if r.rec != nil {
				wire[i].Record = codec.AppendRecord(nil, r.rec)
			}
		}
		res = wire
	}
	return json.Marshal(res)
}

// decodeDBResult decodes the result of a command of kind k. Schema objects
// are not part of it: a decoded fileWritten names its place by ids only,
// and a decoded opResult its table.
func decodeDBResult(k dbKind, b []byte) (any, error) {
	switch k {
	case dbWriteRecords:
		var wire []wireOpResult
		if err := decodeExact(b, &wire); err != nil {
			return nil, err
		}
		out := make([]opResult, len(wire))
		for i, w := range wire {
			out[i] = opResult{Kind: w.Kind, ID: w.ID, Rows: w.Rows, Created: w.Created, Table: w.Table}
			if w.Record != nil {
				out[i].rec = &codec.Record{}
				if err := codec.DecodeRecord(w.Record, out[i].rec); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	case dbSetGitMapping:
		return decodeAs[bool](b)
	case dbSchemaOp, dbMigrate, dbPushMigration, dbSetTableColumns:
		return decodeAs[SchemaChange](b)
	case dbWriteFile:
		return decodeAs[*fileWritten](b)
	case dbStartFlatten:
		return decodeAs[uint32](b)
	}
	if string(b) != "null" {
		return nil, fmt.Errorf("engine: database command of kind %d has no result", k)
	}
	return nil, nil
}

// decodeAs decodes JSON into a T.
func decodeAs[T any](b []byte) (any, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}
