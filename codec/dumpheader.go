package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// A dump is one database in a file: a header line, then the database's
// key range as the engine's backup format writes it (engine/backup.go:
// every branch, layer, record, index, migration and git mapping, keys
// without the database's id, a CRC-32C at the end). The header is one line
// of JSON:
//
//	{"format":"coppice-dump","version":1,"database":"app","region":"local",
//	 "createdAt":"…","dumpedAt":"…","server":"v1.2.0"}\n
//
// version counts changes of the whole file's layout, header and body; a
// reader refuses versions it does not know.
const (
	DumpFormat  = "coppice-dump"
	DumpVersion = 1
	// MaxDumpHeader bounds the header line, newline included.
	MaxDumpHeader = 64 << 10
)

// DumpHeader is the first line of a dump.
type DumpHeader struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Database, Region and CreatedAt describe the database dumped.
	Database  string    `json:"database"`
	Region    string    `json:"region"`
	CreatedAt time.Time `json:"createdAt"`
	// DumpedAt is when the dump was taken; Server the version of the
	// program that took it.
	DumpedAt time.Time `json:"dumpedAt"`
	Server   string    `json:"server,omitempty"`
}

// AppendDumpHeader appends the header line of h, with the format and the
// current version, to dst.
func AppendDumpHeader(dst []byte, h DumpHeader) []byte {
	h.Format, h.Version = DumpFormat, DumpVersion
	b, err := json.Marshal(h)
	if err != nil {
		panic(err) // strings and times always encode
	}
	return append(append(dst, b...), '\n')
}

// ErrNotDump is the error of a header that is not a dump's.
var ErrNotDump = errors.New("not a Coppice dump")

// DecodeDumpHeader decodes a header line (its newline included or not). It
// fails with ErrNotDump for another kind of file, and with an error naming
// the version for a dump of a version it does not know.
func DecodeDumpHeader(line []byte) (DumpHeader, error) {
	var h DumpHeader
	line = bytes.TrimSuffix(line, []byte("\n"))
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &h) != nil || h.Format != DumpFormat {
		return DumpHeader{}, ErrNotDump
	}
	if h.Version != DumpVersion {
		return DumpHeader{}, fmt.Errorf("dump format version %d is not supported (this program reads version %d)", h.Version, DumpVersion)
	}
	if h.Database == "" {
		return DumpHeader{}, errors.New("dump header names no database")
	}
	return h, nil
}
