// Package transfer implements `coppice import` and `coppice export`, which
// move records between files and a table, and `coppice backup`, `restore`,
// `dump` and `load` (backup.go, dump.go), which copy whole servers and
// databases: either through a running server's HTTP API (net/http, an API
// key) or straight through the engine in a data directory that no server
// holds.
//
// Input formats: NDJSON (one JSON object per line; blank lines are not
// records), a JSON array of objects (elements may span lines), and CSV
// (encoding/csv) whose first record is a header of column names. A CSV
// header may name "id" (the record id) and dotted paths into object
// columns (address.city). The format comes from --format, else from the
// extension (.ndjson, .jsonl, .csv), else from the first byte: '[' is a
// JSON array and '{' NDJSON. A UTF-8 byte order mark is ignored.
//
// Records and lines: a record is an NDJSON line that is not blank, an
// element of the array, or a CSV record after the header. Every record
// is known by the 1-based input line it starts on; in CSV the header is
// line 1, so the first record is on line 2 (or later, after a quoted
// field with line breaks). Skip counts records, not lines: Skip = N passes
// over the first N records of the input, whatever they are, bad ones
// included.
//
// Values: JSON records are sent as they are and the server checks them
// against the table's columns. An NDJSON line is checked only for the
// shape of one object (braces, brackets and strings closing where they
// should) before it is sent, and JSON bodies are built as the input is
// read; when the server refuses a batch, its lines are checked in full
// first, so an invalid line fails with the same JSON error either way. CSV fields are converted to the column
// types: an empty field is null (left out); bool by strconv.ParseBool
// (true, false, 1, 0, t, f); int and float as decimal numbers; multiple
// and vector as JSON arrays; object as a JSON object; every other type
// takes the text as it is (a json column reads it as JSON text, a
// datetime must be RFC 3339). A CSV column that is not a column of the
// table stops the import before anything is sent.
//
// Schema inference (ImportOptions.Create, only for a missing table): the
// first InferRows records decide each column's type from its non-null
// values. All booleans: bool. All integers (within int64): int. Numbers
// with at least one non-integer: float. All RFC 3339 strings: datetime.
// All arrays of strings: multiple. All objects: json. Strings otherwise:
// string, or text when one of them is longer than 255 characters or has
// a line break. A column with no non-null value in the sample is string.
// Mixed kinds become json for JSON input (a string in a json column is
// then read as JSON text) and string (or text) for CSV, whose fields are
// all text. In CSV, "true"/"false" are bools and "1"/"0" integers. The key
// "id" is the record id, never a column. Columns come in the order they
// are first seen.
//
// Batches and failures: records go in batches of up to BatchSize records
// (and about 4 MiB), Concurrency batches in flight. A bulk request is all
// or nothing, so when the server refuses a batch for its records, the
// importer finds the bad ones: the engine names them (data directory);
// over HTTP the batch is halved until each bad record is alone (the bulk
// error body has no positions). Every other record is imported; each bad
// one is a Failure with its line and the server's message. Requests the
// server refuses for load (429, 503) or that cannot connect are retried
// with backoff; a request that may have reached the server is never
// retried, so nothing is written twice.
//
// Stopping and resuming: the import stops on an error that is not about
// records (authentication, a missing table, a lost connection), after
// MaxErrors failed records, on an unreadable input, or when its context
// ends (Ctrl-C); the requests in flight finish first. Because batches
// finish out of order, the summary names Resume: every record before it
// is imported or listed as failed, and Skip = Resume continues the import.
// Batches beyond Resume that had already been imported are listed as line
// ranges (continuing imports them again; with ids in the input they fail
// as existing records instead of doubling).
//
// Export pages through a query with cursors and writes NDJSON that import
// reads back into a table of the same schema (see Export).
//
// Backups, dumps and loads are streams of any size: one request each,
// given up when no byte moves for a few minutes rather than after a fixed
// time (stream.go), and checked end to end, by the SHA-256 sums of the
// backup's manifest and the checksum that ends a dump. A backup or dump cut
// short is an error and leaves no partial file behind.
package transfer
