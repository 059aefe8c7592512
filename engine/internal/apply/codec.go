package apply

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// The commands and their encoding, for whatever carries them between
// copies of a data directory (a replicated log). A Command is encoded as a
// plane byte, then, for a database's command, the database id (u32, big
// endian) and the database command's encoding; for the catalog's, the
// catalog command's encoding (catalog.Encode). A database command's
// encoding is a version byte, the command's kind, then the command as
// JSON. JSON of these structs is
// deterministic (fields in declaration order, map keys sorted), and record
// values decode with their numbers as json.Number, which every column
// reads exactly as the value that was encoded. A new field is added with
// a zero value that means what its absence meant; a change of meaning
// takes a new kind, and a change of layout a new version.

// Command is one change as a value: a database's command, with the
// database it changes, or the catalog's. Exactly one of DB and Catalog is
// set.
type Command struct {
	Database uint32    // the database DB changes
	DB       DBCommand // a database's command
	Catalog  catalog.Command
}

// DBCommand is one change of a database as a value: a closed set, each
// with its kind below. It holds everything it needs, resolved before it
// is applied (record ids, times, generated ids), so that applying it reads
// only the database's state and writes the same bytes on every copy of
// the same state.
type DBCommand interface {
	// kind names the command in its encoding.
	kind() dbKind
	// apply stages the command in tx and returns its result, whose type
	// each command documents.
	apply(tx *Tx) (any, error)
}

// OnDatabase addresses a command to database id.
func OnDatabase(id uint32, cmd DBCommand) Command { return Command{Database: id, DB: cmd} }

// OnCatalog wraps a catalog command.
func OnCatalog(cmd catalog.Command) Command { return Command{Catalog: cmd} }

// The planes of an encoded Command.
const (
	planeCatalog  = 'c'
	planeDatabase = 'd'
)

// Encode encodes a command, deterministically: the same command always
// encodes to the same bytes.
func Encode(cmd Command) ([]byte, error) {
	switch {
	case cmd.Catalog != nil && cmd.DB == nil:
		b, err := catalog.Encode(cmd.Catalog)
		if err != nil {
			return nil, err
		}
		return append([]byte{planeCatalog}, b...), nil
	case cmd.DB != nil && cmd.Catalog == nil:
		b, err := encodeDBCommand(cmd.DB)
		if err != nil {
			return nil, err
		}
		return append(codec.AppendU32([]byte{planeDatabase}, cmd.Database), b...), nil
	}
	return nil, fmt.Errorf("engine: a command is of the catalog or of one database")
}

// Decode decodes what Encode wrote.
func Decode(b []byte) (Command, error) {
	if len(b) > 0 && b[0] == planeCatalog {
		c, err := catalog.Decode(b[1:])
		return Command{Catalog: c}, err
	}
	if len(b) < 5 || b[0] != planeDatabase {
		return Command{}, fmt.Errorf("engine: command of unknown plane")
	}
	c, err := decodeDBCommand(b[5:])
	return Command{Database: binary.BigEndian.Uint32(b[1:5]), DB: c}, err
}

// EncodeResult encodes the result of a command, for the copy that
// proposed it: JSON, decoded by the command's kind. Records go in their
// stored form; schema objects, which the proposer has in its own state,
// go by id.
func EncodeResult(cmd Command, res any) ([]byte, error) {
	if cmd.Catalog != nil {
		return catalog.EncodeResult(res)
	}
	return encodeDBResult(res)
}

// DecodeResult decodes the result of cmd that EncodeResult wrote.
func DecodeResult(cmd Command, b []byte) (any, error) {
	if cmd.Catalog != nil {
		return catalog.DecodeResult(cmd.Catalog, b)
	}
	if cmd.DB == nil {
		return nil, fmt.Errorf("engine: empty command")
	}
	return decodeDBResult(cmd.DB.kind(), b)
}

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

func (*InitDatabase) kind() dbKind      { return dbInit }
func (*WriteRecords) kind() dbKind      { return dbWriteRecords }
func (*CreateBranch) kind() dbKind      { return dbCreateBranch }
func (*DeleteBranch) kind() dbKind      { return dbDeleteBranch }
func (*SetBranchMetadata) kind() dbKind { return dbSetBranchMetadata }
func (*SetGitMapping) kind() dbKind     { return dbSetGitMapping }
func (*SchemaOp) kind() dbKind          { return dbSchemaOp }
func (*Migrate) kind() dbKind           { return dbMigrate }
func (*PushMigration) kind() dbKind     { return dbPushMigration }
func (*SetTableColumns) kind() dbKind   { return dbSetTableColumns }
func (*WriteFile) kind() dbKind         { return dbWriteFile }
func (*StartFlatten) kind() dbKind      { return dbStartFlatten }
func (*FinishFlatten) kind() dbKind     { return dbFinishFlatten }

// dbCommands makes an empty command of each kind, for decoding.
var dbCommands = map[dbKind]func() DBCommand{
	dbInit:              func() DBCommand { return new(InitDatabase) },
	dbWriteRecords:      func() DBCommand { return new(WriteRecords) },
	dbCreateBranch:      func() DBCommand { return new(CreateBranch) },
	dbDeleteBranch:      func() DBCommand { return new(DeleteBranch) },
	dbSetBranchMetadata: func() DBCommand { return new(SetBranchMetadata) },
	dbSetGitMapping:     func() DBCommand { return new(SetGitMapping) },
	dbSchemaOp:          func() DBCommand { return new(SchemaOp) },
	dbMigrate:           func() DBCommand { return new(Migrate) },
	dbPushMigration:     func() DBCommand { return new(PushMigration) },
	dbSetTableColumns:   func() DBCommand { return new(SetTableColumns) },
	dbWriteFile:         func() DBCommand { return new(WriteFile) },
	dbStartFlatten:      func() DBCommand { return new(StartFlatten) },
	dbFinishFlatten:     func() DBCommand { return new(FinishFlatten) },
}

// dbCodecVersion is the version of the encoding.
const dbCodecVersion = 1

// encodeDBCommand encodes a database command.
func encodeDBCommand(cmd DBCommand) ([]byte, error) {
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	return append([]byte{dbCodecVersion, byte(cmd.kind())}, body...), nil
}

// decodeDBCommand decodes what encodeDBCommand wrote.
func decodeDBCommand(b []byte) (DBCommand, error) {
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

// wireOpResult is an OpResult as encoded: the record in its stored form.
type wireOpResult struct {
	Kind    model.OpKind `json:"kind"`
	ID      string       `json:"id"`
	Rows    int          `json:"rows,omitempty"`
	Created bool         `json:"created,omitempty"`
	Table   uint32       `json:"table"`
	Record  []byte       `json:"record,omitempty"`
}

// encodeDBResult encodes the result of a database command (EncodeResult).
func encodeDBResult(res any) ([]byte, error) {
	if ops, ok := res.([]OpResult); ok {
		wire := make([]wireOpResult, len(ops))
		for i, r := range ops {
			wire[i] = wireOpResult{Kind: r.Kind, ID: r.ID, Rows: r.Rows, Created: r.Created, Table: r.Table}
			if r.Rec != nil {
				wire[i].Record = codec.AppendRecord(nil, r.Rec)
			}
		}
		res = wire
	}
	return json.Marshal(res)
}

// decodeDBResult decodes the result of a command of kind k. Schema objects
// are not part of it: a decoded FileWritten names its place by ids only,
// and a decoded OpResult its table.
func decodeDBResult(k dbKind, b []byte) (any, error) {
	switch k {
	case dbWriteRecords:
		var wire []wireOpResult
		if err := decodeExact(b, &wire); err != nil {
			return nil, err
		}
		out := make([]OpResult, len(wire))
		for i, w := range wire {
			out[i] = OpResult{Kind: w.Kind, ID: w.ID, Rows: w.Rows, Created: w.Created, Table: w.Table}
			if w.Record != nil {
				out[i].Rec = &codec.Record{}
				if err := codec.DecodeRecord(w.Record, out[i].Rec); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	case dbSetGitMapping:
		return decodeAs[bool](b)
	case dbSchemaOp, dbMigrate, dbPushMigration, dbSetTableColumns:
		return decodeAs[model.SchemaChange](b)
	case dbWriteFile:
		return decodeAs[*FileWritten](b)
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
