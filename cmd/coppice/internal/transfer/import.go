package transfer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// Defaults of ImportOptions.
const (
	DefaultConcurrency = 4
	DefaultInferRows   = 1000
	// maxBatchBytes closes a batch before its records reach this many
	// bytes, well under the server's default body limit; a server with a
	// smaller limit answers 413 and the batch is split.
	maxBatchBytes = 4 << 20
)

// ImportOptions configure an import. The zero value of every number is its
// default.
type ImportOptions struct {
	Target
	// Input is read to its end. InputName (a file name, or "-" for
	// standard input) picks the format by its extension and names the
	// input in messages. InputSize is its size in bytes, 0 if unknown: it
	// gives the progress a total and an ETA.
	Input     io.Reader
	InputName string
	InputSize int64
	// Format is FormatNDJSON, FormatJSON or FormatCSV; empty detects it.
	Format string
	// Delimiter separates CSV fields; 0 means a comma.
	Delimiter rune
	// Create creates a missing table with columns inferred from the first
	// InferRows records (default DefaultInferRows).
	Create    bool
	InferRows int
	// Skip is the number of records at the start of the input to pass
	// over: the Resume of an earlier, stopped import.
	Skip int64
	// BatchSize is the most records per bulk request (default and at most
	// engine.MaxBulkRecords); Concurrency the requests in flight (default
	// DefaultConcurrency).
	BatchSize   int
	Concurrency int
	// MaxErrors stops the import once that many records have failed; 0
	// means no limit.
	MaxErrors int64
	// Log receives the progress, every failure and the summary.
	Log      io.Writer
	Progress Progress
}

// Failure is one record that was not imported.
type Failure struct {
	// Line is the 1-based input line the record starts on; in CSV the
	// header is line 1.
	Line    int64
	Message string
}

// LineRange is a range of input lines, both ends included.
type LineRange struct{ First, Last int64 }

// ImportSummary is the outcome of an import.
type ImportSummary struct {
	// Read counts the records read after the skipped ones; Imported and
	// Failed are parts of it. Records read but neither imported nor failed
	// were not attempted because the import stopped.
	Read, Imported, Failed, Skipped int64
	// Bytes is the input taken by the records read (not the skipped ones).
	Bytes   int64
	Elapsed time.Duration
	// Failures are the failed records in input order.
	Failures []Failure
	// Resume is the Skip that continues this import: every record before
	// it is imported or in Failures.
	Resume int64
	// Stopped is why the import ended before the end of its input, or nil.
	Stopped error
	// Ahead are the batches beyond Resume that were imported before the
	// import stopped: continuing with Skip = Resume imports them again.
	Ahead []LineRange
}

// batch is a run of consecutive input records sent together.
type batch struct {
	seq   int
	first int64 // input ordinal (0-based, skipped records counted) of recs[0]
	recs  []record
	// body is the bulk request of the JSON records, {"records":[…]},
	// built as they are read so that a sender posts it as it is; the raw
	// of each record is a slice of it. nil for CSV, whose records are
	// converted when sent.
	body []byte
}

// outcome is what became of a batch.
type outcome struct {
	b        *batch
	imported int64
	failures []Failure
	// settled is true when every record is imported or failed; else err
	// says why not (nil: never sent because the import stopped).
	settled bool
	err     error
}

// importer runs one import.
type importer struct {
	o     ImportOptions
	st    store
	conv  *csvConverter
	meter *meter
	stop  chan struct{}
	once  sync.Once
	// failed counts the failed records of the batches sent so far.
	failed atomic.Int64
}

// Import loads the input into the table. It returns an error without a
// summary when the import cannot start (bad options, unreachable server,
// missing table); once it has started, problems end up in the summary,
// which it also writes to o.Log.
func Import(ctx context.Context, o ImportOptions) (sum *ImportSummary, err error) {
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	format, src, header, err := openSource(&o)
	if err != nil {
		return nil, err
	}
	st, err := o.Target.open(o.Concurrency)
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
	im := &importer{o: o, st: st, stop: make(chan struct{})}
	start := time.Now()
	var skipped, skipBytes int64
	for skipped < o.Skip {
		rec, err := src.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("skipping: %w", err)
		}
		skipped++
		skipBytes += rec.size
	}
	t := findTable(tables, o.Table)
	var sample []record
	if t == nil {
		if t, sample, err = im.createTable(ctx, src, header, format == FormatCSV); err != nil {
			return nil, err
		}
	}
	if header != nil {
		if im.conv, err = newCSVConverter(header, o.Table, t.Columns); err != nil {
			return nil, err
		}
	}
	// The progress measures this run: the input after the skipped records.
	im.meter = newMeter("import", o.Log, o.Progress, max(0, o.InputSize-skipBytes), true)
	sum = im.run(ctx, src, sample, skipped)
	sum.Skipped = skipped
	sum.Elapsed = time.Since(start)
	im.meter.finish(sum.Stopped == nil)
	sum.Bytes = im.meter.bytes
	im.report(sum, format)
	return sum, nil
}

// setDefaults fills in the zero values and checks the rest.
func (o *ImportOptions) setDefaults() error {
	if o.BatchSize == 0 {
		o.BatchSize = engine.MaxBulkRecords
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.InferRows == 0 {
		o.InferRows = DefaultInferRows
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	switch {
	case o.Input == nil:
		return errors.New("no input")
	case o.BatchSize < 1 || o.BatchSize > engine.MaxBulkRecords:
		return fmt.Errorf("--batch must be 1..%d, got %d", engine.MaxBulkRecords, o.BatchSize)
	case o.Concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1, got %d", o.Concurrency)
	case o.InferRows < 1:
		return fmt.Errorf("--infer-rows must be at least 1, got %d", o.InferRows)
	case o.Skip < 0:
		return fmt.Errorf("--skip must not be negative, got %d", o.Skip)
	case o.MaxErrors < 0:
		return fmt.Errorf("--max-errors must not be negative, got %d", o.MaxErrors)
	}
	return nil
}

// openSource detects the input's format and reads a CSV header.
func openSource(o *ImportOptions) (format string, src source, header []string, err error) {
	br := bufio.NewReaderSize(o.Input, 1<<20)
	if format, err = detectFormat(o.Format, o.InputName, br); err != nil {
		return "", nil, nil, err
	}
	switch format {
	case FormatNDJSON:
		return format, newNDJSONSource(br), nil, nil
	case FormatJSON:
		return format, newArraySource(br), nil, nil
	}
	cs, err := newCSVSource(br, o.Delimiter)
	if err != nil {
		return "", nil, nil, err
	}
	return format, cs, cs.header, nil
}

// createTable creates the missing table when asked to, with the columns
// inferred from the next InferRows records, which it returns for import.
func (im *importer) createTable(ctx context.Context, src source, header []string, csv bool) (*tableDef, []record, error) {
	o := &im.o
	if !o.Create {
		return nil, nil, fmt.Errorf("table [%s] not found: add --create to create it with columns inferred from the input", o.Table)
	}
	inf := newInferrer(csv)
	if header != nil {
		inf.addHeader(header)
	}
	var sample []record
	for len(sample) < o.InferRows {
		rec, err := src.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if rec.unchecked {
			// A record the server would refuse decides no column.
			if rec.bad = checkObject(rec.raw); rec.bad != "" {
				rec.raw = nil
			}
			rec.unchecked = false
		}
		rec.raw = bytes.Clone(rec.raw)
		inf.add(&rec, header)
		sample = append(sample, rec)
	}
	t := &tableDef{Name: o.Table, Columns: inf.columns()}
	if err := im.st.createTable(ctx, o.Table, t.Columns); err != nil {
		return nil, nil, fmt.Errorf("create table [%s]: %w", o.Table, err)
	}
	fmt.Fprintf(o.Log, "import: created table [%s] with columns: %s\n", o.Table, describeColumns(t.Columns))
	return t, sample, nil
}

// halt stops the import: no new batch is sent.
func (im *importer) halt() { im.once.Do(func() { close(im.stop) }) }

// halted reports whether the import is stopping.
func (im *importer) halted() bool {
	select {
	case <-im.stop:
		return true
	default:
		return false
	}
}

// run sends the sample, then the rest of the input, in batches with
// o.Concurrency in flight, and gathers the outcomes: counts, failures and
// the resume point, the end of the settled batches in input order.
func (im *importer) run(ctx context.Context, src source, sample []record, skipped int64) *ImportSummary {
	o := &im.o
	done, prod := im.start(ctx, src, sample, skipped)
	sum := &ImportSummary{Resume: skipped}
	var tooMany error // the --max-errors stop
	pending := map[int]*outcome{}
	next := 0
	for oc := range done {
		sum.Imported += oc.imported
		sum.Failed += int64(len(oc.failures))
		sum.Failures = append(sum.Failures, oc.failures...)
		for _, f := range oc.failures {
			im.meter.println(fmt.Sprintf("line %d: %s", f.Line, f.Message))
		}
		if oc.settled {
			var size int64
			for i := range oc.b.recs {
				size += oc.b.recs[i].size
			}
			im.meter.add(int64(len(oc.b.recs)), size)
		}
		if oc.err != nil && sum.Stopped == nil {
			sum.Stopped = oc.err
		}
		if o.MaxErrors > 0 && sum.Failed >= o.MaxErrors && tooMany == nil {
			tooMany = fmt.Errorf("%d records failed (--max-errors %d)", sum.Failed, o.MaxErrors)
		}
		pending[oc.b.seq] = oc
		for p := pending[next]; p != nil && p.settled; p = pending[next] {
			sum.Resume = p.b.first + int64(len(p.b.recs))
			delete(pending, next)
			next++
		}
	}
	// done is closed, so the producer has returned.
	sum.Read = prod.read
	if sum.Stopped == nil {
		switch {
		case prod.err != nil:
			sum.Stopped = fmt.Errorf("reading the input: %w", prod.err)
		case prod.complete && len(pending) == 0:
			// Everything was read and settled: nothing was stopped.
		case tooMany != nil:
			sum.Stopped = tooMany
		default:
			sum.Stopped = errors.New("interrupted")
		}
	}
	for _, p := range pending {
		if p.imported > 0 {
			sum.Ahead = append(sum.Ahead, LineRange{p.b.recs[0].line, p.b.recs[len(p.b.recs)-1].line})
		}
	}
	sort.Slice(sum.Ahead, func(i, j int) bool { return sum.Ahead[i].First < sum.Ahead[j].First })
	sort.SliceStable(sum.Failures, func(i, j int) bool { return sum.Failures[i].Line < sum.Failures[j].Line })
	return sum
}

// produced is what the producer reports: the records it read after the
// skipped ones, whether that was the whole input, and the error that
// ended reading early.
type produced struct {
	read     int64
	complete bool
	err      error
}

// start runs the producer and the senders. The outcomes come on the
// channel, which is closed once every batch has one; the producer's report
// is set by then.
func (im *importer) start(ctx context.Context, src source, sample []record, skipped int64) (<-chan *outcome, *produced) {
	o := &im.o
	work := make(chan *batch, o.Concurrency)
	done := make(chan *outcome, o.Concurrency)
	prod := &produced{}
	go func() {
		defer close(work)
		prod.read, prod.complete, prod.err = im.produce(ctx, src, sample, skipped, work)
	}()
	// Requests in flight finish even when ctx ends, so that every batch
	// sent has a known outcome.
	sendCtx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				if im.halted() {
					done <- &outcome{b: b}
					continue
				}
				oc := im.send(sendCtx, b)
				// Halting here, before taking the next batch, makes a
				// single worker stop right after the batch that failed.
				failed := im.failed.Add(int64(len(oc.failures)))
				if oc.err != nil || (o.MaxErrors > 0 && failed >= o.MaxErrors) {
					im.halt()
				}
				done <- oc
			}
		}()
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	return done, prod
}

// produce cuts the records into batches until the input ends, the import
// halts or ctx ends. It returns the number of records read after the
// skipped ones, whether that was all of the input, and the error that
// ended reading early, if any.
func (im *importer) produce(ctx context.Context, src source, sample []record, skipped int64, work chan<- *batch) (int64, bool, error) {
	ordinal := skipped
	// bodyCap sizes the next body like the last one, so that it is
	// rarely grown (and copied) while it fills.
	bodyCap := 64 << 10
	newBatch := func(seq int) *batch {
		b := &batch{seq: seq, first: ordinal, recs: make([]record, 0, im.o.BatchSize)}
		if im.conv == nil {
			b.body = append(make([]byte, 0, bodyCap), bulkPrefix...)
		}
		return b
	}
	b := newBatch(0)
	var size int64
	emit := func() bool {
		if len(b.recs) == 0 {
			return true
		}
		if b.body != nil {
			b.body = append(b.body, bulkSuffix...)
			bodyCap = max(bodyCap, len(b.body)+len(b.body)/8)
		}
		select {
		case work <- b:
		case <-im.stop:
			return false
		case <-ctx.Done():
			return false
		}
		b = newBatch(b.seq + 1)
		size = 0
		return true
	}
	add := func(rec record) bool {
		n := int64(len(rec.raw))
		for _, c := range rec.cells {
			n += int64(len(c)) + 8
		}
		if len(b.recs) > 0 && size+n > maxBatchBytes && !emit() {
			return false
		}
		if rec.raw != nil {
			// The record is kept in the body: raw is only valid until
			// the source's next read.
			if len(b.body) > len(bulkPrefix) {
				b.body = append(b.body, ',')
			}
			at := len(b.body)
			b.body = append(b.body, rec.raw...)
			rec.raw = b.body[at:len(b.body):len(b.body)]
		}
		b.recs = append(b.recs, rec)
		size += n
		ordinal++
		return len(b.recs) < im.o.BatchSize || emit()
	}
	for _, rec := range sample {
		if !add(rec) {
			return ordinal - skipped, false, nil
		}
	}
	for {
		if im.halted() || ctx.Err() != nil {
			return ordinal - skipped, false, nil
		}
		rec, err := src.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			emit()
			return ordinal - skipped, false, err
		}
		if !add(rec) {
			return ordinal - skipped, false, nil
		}
	}
	return ordinal - skipped, emit(), nil
}

// entry is a record of a batch on its way to the store.
type entry struct {
	line      int64
	raw       []byte
	unchecked bool // as record.unchecked
}

// send imports one batch: records the input could not give are failures
// at once; the rest go to the store, and when the store refuses them,
// the bad ones are found and the others imported (isolate).
func (im *importer) send(ctx context.Context, b *batch) *outcome {
	oc := &outcome{b: b}
	entries := make([]entry, 0, len(b.recs))
	for i := range b.recs {
		rec := &b.recs[i]
		raw, bad := rec.raw, rec.bad
		if rec.cells != nil {
			raw, bad = im.conv.convert(rec.cells)
		}
		if raw == nil {
			oc.failures = append(oc.failures, Failure{Line: rec.line, Message: bad})
			continue
		}
		entries = append(entries, entry{line: rec.line, raw: raw, unchecked: rec.unchecked})
	}
	n, failures, err := im.isolate(ctx, entries, b.body)
	oc.imported = n
	oc.failures = append(oc.failures, failures...)
	sort.SliceStable(oc.failures, func(i, j int) bool { return oc.failures[i].Line < oc.failures[j].Line })
	if err != nil {
		oc.err = fmt.Errorf("batch of lines %d-%d: %w", b.recs[0].line, b.recs[len(b.recs)-1].line, err)
		return oc
	}
	oc.settled = true
	return oc
}

// isolate inserts entries; body, when not nil, is their bulk request
// body (batch.body). A refused batch is all or nothing, so its records
// whose JSON is invalid are taken out first; then, when the store names
// the bad records they are taken out and the rest sent again; when it
// does not (over HTTP), the batch is halved until each bad record stands
// alone. It returns the records imported and failed; an error means the
// rest of entries has no known outcome.
func (im *importer) isolate(ctx context.Context, entries []entry, body []byte) (int64, []Failure, error) {
	if len(entries) == 0 {
		return 0, nil, nil
	}
	var err error
	if bs, ok := im.st.(bodyStore); ok && body != nil {
		err = bs.insertBody(ctx, im.o.Table, body)
	} else {
		raws := make([][]byte, len(entries))
		for i := range entries {
			raws[i] = entries[i].raw
		}
		err = im.st.insert(ctx, im.o.Table, raws)
	}
	if err == nil {
		return int64(len(entries)), nil, nil
	}
	var re *recordErrors
	if !errors.As(err, &re) {
		return 0, nil, err
	}
	if failures, rest := checkEntries(entries); len(failures) > 0 {
		n, more, err := im.isolate(ctx, rest, nil)
		return n, append(failures, more...), err
	}
	if len(re.byIndex) > 0 {
		var failures []Failure
		rest := make([]entry, 0, len(entries))
		for i, e := range entries {
			if msg, ok := re.byIndex[i]; ok {
				failures = append(failures, Failure{Line: e.line, Message: msg})
			} else {
				rest = append(rest, e)
			}
		}
		n, more, err := im.isolate(ctx, rest, nil)
		return n, append(failures, more...), err
	}
	if len(entries) == 1 {
		return 0, []Failure{{Line: entries[0].line, Message: re.Error()}}, nil
	}
	half := len(entries) / 2
	n1, f1, err := im.isolate(ctx, entries[:half], nil)
	if err != nil {
		return n1, f1, err
	}
	n2, f2, err := im.isolate(ctx, entries[half:], nil)
	return n1 + n2, append(f1, f2...), err
}

// checkEntries checks the syntax of the unchecked entries, in place. It
// returns the ones that are not valid JSON objects as failures, and the
// others; no failures when every entry is valid.
func checkEntries(entries []entry) ([]Failure, []entry) {
	var failures []Failure
	var rest []entry
	for i := range entries {
		e := &entries[i]
		bad := ""
		if e.unchecked {
			e.unchecked = false
			bad = checkObject(e.raw)
		}
		switch {
		case bad != "":
			if failures == nil {
				rest = append(rest, entries[:i]...)
			}
			failures = append(failures, Failure{Line: e.line, Message: bad})
		case failures != nil:
			rest = append(rest, *e)
		}
	}
	if failures == nil {
		return nil, entries
	}
	return failures, rest
}

// report writes the summary.
func (im *importer) report(sum *ImportSummary, format string) {
	w := im.o.Log
	secs := sum.Elapsed.Seconds()
	fmt.Fprintf(w, "import: read %d records", sum.Read)
	if sum.Skipped > 0 {
		fmt.Fprintf(w, " after skipping %d", sum.Skipped)
	}
	fmt.Fprintf(w, ", imported %d, failed %d", sum.Imported, sum.Failed)
	if rest := sum.Read - sum.Imported - sum.Failed; rest > 0 {
		fmt.Fprintf(w, ", not attempted %d", rest)
	}
	fmt.Fprintf(w, " in %s: %s, %s\n", sum.Elapsed.Round(time.Millisecond),
		rate(float64(sum.Imported), secs, "records"), rate(float64(sum.Bytes)/(1<<20), secs, "MiB"))
	if len(sum.Failures) > 0 {
		lines := make([]string, 0, 20)
		for i, f := range sum.Failures {
			if i == 20 {
				lines = append(lines, fmt.Sprintf("… (%d in all)", len(sum.Failures)))
				break
			}
			lines = append(lines, fmt.Sprint(f.Line))
		}
		note := ""
		if format == FormatCSV {
			note = " (the CSV header is line 1)"
		}
		fmt.Fprintf(w, "import: failed lines%s: %s\n", note, strings.Join(lines, ", "))
	}
	if sum.Stopped == nil {
		return
	}
	fmt.Fprintf(w, "import: stopped: %v\n", sum.Stopped)
	fmt.Fprintf(w, "import: the first %d records of the input are imported or listed as failed; to continue, run the same import with --skip %d\n",
		sum.Resume, sum.Resume)
	if len(sum.Ahead) > 0 {
		parts := make([]string, len(sum.Ahead))
		for i, r := range sum.Ahead {
			parts[i] = fmt.Sprintf("%d-%d", r.First, r.Last)
		}
		fmt.Fprintf(w, "import: records after that point were imported too (lines %s); continuing imports them again\n", strings.Join(parts, ", "))
	}
}
