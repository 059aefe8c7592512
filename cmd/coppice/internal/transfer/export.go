package transfer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// exportPageSize is the page size of an export's queries: the largest the
// spec allows, in both API modes.
const exportPageSize = 200

// ExportOptions configure an export.
type ExportOptions struct {
	Target
	// Filter is a filter expression (JSON) of the query; empty exports
	// every record.
	Filter string
	// Sort is a sort expression (JSON), or a comma-separated list of
	// column names, each optionally followed by :asc or :desc. Empty sorts
	// by id.
	Sort string
	// Columns selects columns as the query's `columns` does (dotted paths
	// reach into objects and links). Empty selects every column except
	// file columns, whose content records do not hold.
	Columns []string
	// Out receives the records, one JSON object per line.
	Out io.Writer
	// Log receives the progress and the summary.
	Log      io.Writer
	Progress Progress
}

// ExportSummary is the outcome of an export.
type ExportSummary struct {
	Records, Bytes int64
	Elapsed        time.Duration
	// Stopped is why the export ended before the last record, or nil.
	Stopped error
}

// Export writes the records of a table, or of a query on it, as NDJSON:
// each line is an object with the record's id and its columns, without
// the record metadata; links are the linked record's id (an object when
// --columns selects columns of the linked record); datetimes, json
// columns and numbers are written as the API writes them. Importing the
// output into a table of the same schema recreates the records.
func Export(ctx context.Context, o ExportOptions) (sum *ExportSummary, err error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Out == nil {
		return nil, errors.New("no output")
	}
	var filter json.RawMessage
	if f := strings.TrimSpace(o.Filter); f != "" {
		if f[0] != '{' || !json.Valid([]byte(f)) {
			return nil, errors.New("--filter must be a JSON object (a filter expression)")
		}
		filter = json.RawMessage(f)
	}
	sortExpr, err := parseSort(o.Sort)
	if err != nil {
		return nil, err
	}
	st, err := o.Target.open(1)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := st.close(); cerr != nil && err == nil {
			sum, err = nil, cerr
		}
	}()
	tables, err := st.tables(ctx)
	if err != nil {
		return nil, err
	}
	t := findTable(tables, o.Table)
	if t == nil {
		return nil, fmt.Errorf("table [%s] not found", o.Table)
	}
	columns, err := exportColumns(t, o.Columns)
	if err != nil {
		return nil, err
	}
	// The count only gives the progress a total; an export goes on without.
	total, err := st.count(ctx, o.Table, filter)
	if err != nil {
		total = 0
	}
	start := time.Now()
	m := newMeter("export", o.Log, o.Progress, total, false)
	w := bufio.NewWriterSize(o.Out, 1<<20)
	sum = &ExportSummary{}
	req := queryRequest{Filter: filter, Sort: sortExpr, Columns: columns, Size: exportPageSize}
	norm := &normalizer{tables: tables}
	sum.Stopped = writePages(ctx, st, o.Table, req, w, func(n int) {
		sum.Records++
		sum.Bytes += int64(n)
		m.add(1, int64(n))
	}, func(rec map[string]any) map[string]any {
		return norm.record(rec, t.Columns, true)
	})
	if err := w.Flush(); err != nil && sum.Stopped == nil {
		sum.Stopped = err
	}
	sum.Elapsed = time.Since(start)
	m.finish(sum.Stopped == nil)
	secs := sum.Elapsed.Seconds()
	fmt.Fprintf(o.Log, "export: wrote %d records (%s) in %s: %s, %s\n", sum.Records, formatBytes(sum.Bytes),
		sum.Elapsed.Round(time.Millisecond), rate(float64(sum.Records), secs, "records"), rate(float64(sum.Bytes)/(1<<20), secs, "MiB"))
	if sum.Stopped != nil {
		fmt.Fprintf(o.Log, "export: stopped: %v\n", sum.Stopped)
	}
	return sum, nil
}

// writePages writes the records of every page of a query to w as NDJSON,
// each normalized by norm, and calls wrote with each line's length. It
// returns why it stopped early, or nil after the last page.
func writePages(ctx context.Context, st store, table string, req queryRequest, w io.Writer,
	wrote func(int), norm func(map[string]any) map[string]any) error {
	var buf bytes.Buffer
	for {
		if ctx.Err() != nil {
			return errors.New("interrupted")
		}
		page, err := st.query(ctx, table, req)
		if err != nil {
			return err
		}
		for _, rec := range page.records {
			buf.Reset()
			if err := appendRecord(&buf, norm(rec)); err != nil {
				return err
			}
			if _, err := w.Write(buf.Bytes()); err != nil {
				return err
			}
			wrote(buf.Len())
		}
		if !page.more || len(page.records) == 0 {
			return nil
		}
		req = queryRequest{Size: exportPageSize, After: page.cursor}
	}
}

// parseSort turns --sort into a sort expression: JSON as it is, or
// "a,b:desc" as [{"a":"asc"},{"b":"desc"}].
func parseSort(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if s[0] == '{' || s[0] == '[' {
		if !json.Valid([]byte(s)) {
			return nil, errors.New("--sort is not valid JSON")
		}
		return json.RawMessage(s), nil
	}
	var list []map[string]string
	for _, part := range strings.Split(s, ",") {
		col, dir, _ := strings.Cut(strings.TrimSpace(part), ":")
		if col == "" {
			return nil, fmt.Errorf("--sort: empty column name in %q", s)
		}
		switch dir {
		case "":
			dir = "asc"
		case "asc", "desc":
		default:
			return nil, fmt.Errorf("--sort: order of [%s] must be asc or desc, got %q", col, dir)
		}
		list = append(list, map[string]string{col: dir})
	}
	return json.Marshal(list)
}

// exportColumns is the query's `columns`: the ones asked for, else every
// column but file columns (nil when there are none, which selects all).
// File columns are refused: an export holds no file content.
func exportColumns(t *tableDef, asked []string) (json.RawMessage, error) {
	isFile := func(name string) bool {
		top, _, _ := strings.Cut(name, ".")
		i := indexOfColumn(t.Columns, top)
		return i >= 0 && (t.Columns[i].Type == engine.TypeFile || t.Columns[i].Type == engine.TypeFileArray)
	}
	if len(asked) > 0 {
		for _, c := range asked {
			if isFile(c) {
				return nil, fmt.Errorf("--columns: [%s] is a file column; exports hold no file content", c)
			}
		}
		return json.Marshal(asked)
	}
	var cols []string
	files := false
	for _, c := range t.Columns {
		if isFile(c.Name) {
			files = true
			continue
		}
		cols = append(cols, c.Name)
	}
	if !files {
		return nil, nil
	}
	if cols == nil {
		cols = []string{}
	}
	return json.Marshal(cols)
}

// normalizer turns records as the API answers them into records as an
// import takes them, by the schema: the metadata and anything else that
// is not a column are dropped, and a link holding only the linked id
// becomes that id.
type normalizer struct {
	tables []tableDef
}

// record keeps the columns of cols that rec holds, and its id when
// withID.
func (n *normalizer) record(rec map[string]any, cols []engine.ColumnDef, withID bool) map[string]any {
	out := make(map[string]any, len(rec))
	if id, ok := rec["id"]; ok && withID {
		out["id"] = id
	}
	for i := range cols {
		c := &cols[i]
		if v, ok := rec[c.Name]; ok && v != nil {
			out[c.Name] = n.value(c, v)
		}
	}
	return out
}

// value normalizes the value of one column.
func (n *normalizer) value(c *engine.ColumnDef, v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	switch c.Type {
	case engine.TypeLink:
		var cols []engine.ColumnDef
		if c.Link != nil {
			if t := findTable(n.tables, c.Link.Table); t != nil {
				cols = t.Columns
			}
		}
		r := n.record(m, cols, true)
		if id, ok := r["id"]; ok && len(r) == 1 {
			return id
		}
		return r
	case engine.TypeObject:
		return n.record(m, c.Columns, false)
	}
	return v
}

// appendRecord writes a record as one line of JSON: id first, then the
// other keys in order, without HTML escaping (as the API writes JSON).
func appendRecord(buf *bytes.Buffer, rec map[string]any) error {
	keys := make([]string, 0, len(rec))
	for k := range rec {
		if k != "id" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if _, ok := rec["id"]; ok {
		keys = append([]string{"id"}, keys...)
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(k); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode ends with a newline
		buf.WriteByte(':')
		if err := enc.Encode(rec[k]); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1)
	}
	buf.WriteString("}\n")
	return nil
}
