package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/coppice-db/coppice/cmd/coppice/internal/transfer"
)

// targetFlags are the flags import and export share: where the table is
// and how progress shows.
type targetFlags struct {
	target   transfer.Target
	progress string
	every    int64
}

// declare adds the shared flags to fs, each defaulting to its environment
// variable. The API key has no flag default, so help never prints it.
func (f *targetFlags) declare(fs *flag.FlagSet, getenv func(string) string) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	t := &f.target
	fs.StringVar(&t.URL, "url", env("COPPICE_URL", "http://127.0.0.1:8080"), "server URL (env COPPICE_URL)")
	fs.StringVar(&t.APIKey, "api-key", "",
		"API key, never printed; better set in the environment, which the process list does not show (env COPPICE_API_KEY)")
	fs.StringVar(&t.Workspace, "workspace", env("COPPICE_WORKSPACE", ""),
		"workspace id; over HTTP it may be left out when the API key reaches one workspace; required with --data (env COPPICE_WORKSPACE)")
	fs.StringVar(&t.Database, "db", env("COPPICE_DB", ""), "database name (env COPPICE_DB)")
	fs.StringVar(&t.Branch, "branch", env("COPPICE_BRANCH", "main"), "branch name (env COPPICE_BRANCH)")
	fs.StringVar(&t.Table, "table", env("COPPICE_TABLE", ""), "table name (env COPPICE_TABLE)")
	fs.StringVar(&t.DataDir, "data", "",
		"a data directory to open directly instead of calling a server; refused while a server holds it")
	fs.StringVar(&f.progress, "progress", "auto", "progress display: auto (a bar on a terminal, else lines), bar, lines or off")
	fs.Int64Var(&f.every, "progress-every", transfer.DefaultProgressEvery, "records between two progress lines")
}

// finish completes the shared flags after parsing.
func (f *targetFlags) finish(fs *flag.FlagSet, getenv func(string) string, log io.Writer) (transfer.Progress, error) {
	if f.target.APIKey == "" {
		f.target.APIKey = getenv("COPPICE_API_KEY")
	}
	if f.target.DataDir != "" {
		urlSet := false
		fs.Visit(func(fl *flag.Flag) { urlSet = urlSet || fl.Name == "url" })
		if urlSet {
			return transfer.Progress{}, errors.New("--data and --url exclude each other: a data directory is opened without a server")
		}
	}
	p := transfer.Progress{Every: f.every}
	switch f.progress {
	case "auto":
		p.Mode = transfer.ProgressLines
		if isTerminal(log) {
			p.Mode = transfer.ProgressBar
		}
	case "bar":
		p.Mode = transfer.ProgressBar
	case "lines":
		p.Mode = transfer.ProgressLines
	case "off":
		p.Mode = transfer.ProgressOff
	default:
		return p, fmt.Errorf("--progress must be auto, bar, lines or off, got %q", f.progress)
	}
	if f.every <= 0 {
		return p, fmt.Errorf("--progress-every must be positive, got %d", f.every)
	}
	return p, nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// interruptible returns a context that ends on the first SIGINT or
// SIGTERM; a second one kills the process as usual.
func interruptible() (context.Context, func()) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// importFlags declares the flags of `coppice import`.
func importFlags(fs *flag.FlagSet, getenv func(string) string) (*transfer.ImportOptions, *targetFlags, *string) {
	o := &transfer.ImportOptions{}
	tf := &targetFlags{}
	tf.declare(fs, getenv)
	var delimiter string
	fs.StringVar(&o.Format, "format", "", "input format: ndjson, json (an array) or csv; default from the file extension, else from the first byte")
	fs.StringVar(&delimiter, "delimiter", ",", "CSV field delimiter (one character)")
	fs.BoolVar(&o.Create, "create", false, "create the table when missing, with columns inferred from the first --infer-rows records")
	fs.IntVar(&o.InferRows, "infer-rows", transfer.DefaultInferRows, "records sampled to infer the columns of --create")
	fs.Int64Var(&o.Skip, "skip", 0, "pass over the first N records of the input (not lines; the CSV header is not a record) to continue a stopped import")
	fs.IntVar(&o.BatchSize, "batch", 1000, "records per bulk request, 1..1000")
	fs.IntVar(&o.Concurrency, "concurrency", transfer.DefaultConcurrency, "bulk requests in flight")
	fs.Int64Var(&o.MaxErrors, "max-errors", 1000, "stop after this many failed records; 0 means no limit")
	return o, tf, &delimiter
}

// importOptions parses the arguments of `coppice import`.
func importOptions(args []string, getenv func(string) string, log io.Writer) (transfer.ImportOptions, error) {
	fs := flag.NewFlagSet("coppice import", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o, tf, delimiter := importFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return transfer.ImportOptions{}, err
	}
	if fs.NArg() != 1 {
		return transfer.ImportOptions{}, errors.New("want one input file (- for standard input) after the flags")
	}
	o.InputName = fs.Arg(0)
	if utf8.RuneCountInString(*delimiter) != 1 {
		return transfer.ImportOptions{}, fmt.Errorf("--delimiter must be one character, got %q", *delimiter)
	}
	o.Delimiter, _ = utf8.DecodeRuneInString(*delimiter)
	p, err := tf.finish(fs, getenv, log)
	if err != nil {
		return transfer.ImportOptions{}, err
	}
	o.Target, o.Progress, o.Log = tf.target, p, log
	return *o, nil
}

// runImport runs `coppice import`: exit status 0 when every record was
// imported, 1 when some failed or the import stopped, 2 for bad usage.
func runImport(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := importOptions(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		importUsage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "coppice import: %v\n", err)
		return 2
	}
	in := io.Reader(os.Stdin)
	if o.InputName != "-" {
		f, err := os.Open(o.InputName)
		if err != nil {
			fmt.Fprintf(stderr, "coppice import: %v\n", err)
			return 1
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			o.InputSize = fi.Size()
		}
		in = f
	}
	o.Input = in
	ctx, stop := interruptible()
	defer stop()
	sum, err := transfer.Import(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "coppice import: %v\n", err)
		return 1
	}
	if sum.Failed > 0 || sum.Stopped != nil {
		return 1
	}
	return 0
}

// exportFlags declares the flags of `coppice export`.
func exportFlags(fs *flag.FlagSet, getenv func(string) string) (*transfer.ExportOptions, *targetFlags, *string, *string) {
	o := &transfer.ExportOptions{}
	tf := &targetFlags{}
	tf.declare(fs, getenv)
	var columns, out string
	fs.StringVar(&o.Filter, "filter", "", `filter expression (JSON), e.g. {"age":{"$ge":30}}`)
	fs.StringVar(&columns, "columns", "", "comma-separated columns to write (dotted paths reach into objects and links); default every column but file columns")
	fs.StringVar(&o.Sort, "sort", "", `sort: JSON (e.g. {"age":"desc"}) or columns as name[:asc|desc],...; default by id`)
	fs.StringVar(&out, "out", "-", "output file, - for standard output")
	return o, tf, &columns, &out
}

// exportOptions parses the arguments of `coppice export`; out is the
// output file name.
func exportOptions(args []string, getenv func(string) string, log io.Writer) (o transfer.ExportOptions, out string, err error) {
	fs := flag.NewFlagSet("coppice export", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	op, tf, columns, outName := exportFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return o, "", err
	}
	if fs.NArg() > 0 {
		return o, "", fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	p, err := tf.finish(fs, getenv, log)
	if err != nil {
		return o, "", err
	}
	op.Columns = splitList(*columns)
	op.Target, op.Progress, op.Log = tf.target, p, log
	return *op, *outName, nil
}

// runExport runs `coppice export`: exit status 0 when every record was
// written, 1 when it stopped early, 2 for bad usage.
func runExport(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, out, err := exportOptions(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		exportUsage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "coppice export: %v\n", err)
		return 2
	}
	o.Out = stdout
	var f *os.File
	if out != "-" {
		if f, err = os.Create(out); err != nil {
			fmt.Fprintf(stderr, "coppice export: %v\n", err)
			return 1
		}
		o.Out = f
	}
	ctx, stop := interruptible()
	defer stop()
	sum, err := transfer.Export(ctx, o)
	if f != nil {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "coppice export: %v\n", err)
		return 1
	}
	if sum.Stopped != nil {
		return 1
	}
	return 0
}

// importUsage documents `coppice import`.
func importUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: coppice import [flags] FILE   (FILE - reads standard input)

Loads NDJSON, a JSON array of objects or CSV (a header of column names
first) into a table, over HTTP with an API key (--url) or straight into a
data directory no server holds (--data). A record that fails is reported
with its input line (1-based; in CSV the header is line 1) and the rest go
on. At the end a summary gives the counts, the failed lines and the
throughput; an import that stopped early names the --skip that continues
it. Progress and the summary go to standard error.

Flags of import (a flag wins over its environment variable):
`)
	fs := flag.NewFlagSet("coppice import", flag.ContinueOnError)
	importFlags(fs, func(string) string { return "" })
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// exportUsage documents `coppice export`.
func exportUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: coppice export [flags]

Writes the records of a table, or of a query on it, as NDJSON: one object
per line with the id and the columns, without the record metadata, which
coppice import reads back. It pages through the query with cursors, from
a server (--url) or a data directory no server holds (--data). Progress and
the summary go to standard error.

Flags of export (a flag wins over its environment variable):
`)
	fs := flag.NewFlagSet("coppice export", flag.ContinueOnError)
	exportFlags(fs, func(string) string { return "" })
	fs.SetOutput(w)
	fs.PrintDefaults()
}
