package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/coppice-db/coppice/api"
	"github.com/coppice-db/coppice/cmd/coppice/internal/transfer"
)

// databaseFlags declares the flags that name a database and where it is:
// a server (--url, --api-key, --workspace) or a data directory (--data).
func databaseFlags(fs *flag.FlagSet, getenv func(string) string, t *transfer.Target, dbWhat string) {
	env := envOr(getenv)
	serverFlag(fs, getenv, t, "API key")
	fs.StringVar(&t.Workspace, "workspace", env("COPPICE_WORKSPACE", ""),
		"workspace id; over HTTP it may be left out when the API key reaches one workspace; required with --data (env COPPICE_WORKSPACE)")
	fs.StringVar(&t.Database, "db", env("COPPICE_DB", ""), dbWhat+" (env COPPICE_DB)")
	fs.StringVar(&t.DataDir, "data", "", "a data directory to open directly instead of calling a server; refused while a server holds it")
}

// dumpFlags declares the flags of `coppice dump`.
func dumpFlags(fs *flag.FlagSet, getenv func(string) string) (*transfer.DumpOptions, *string) {
	o := &transfer.DumpOptions{Program: api.ReadBuildInfo().Version}
	databaseFlags(fs, getenv, &o.Target, "database to dump")
	fs.StringVar(&o.Branch, "branch", "", "keep only this branch and the branches it was forked from; default every branch")
	out := fs.String("out", "-", "output file, - for standard output")
	return o, out
}

// runDump runs `coppice dump`: exit status 0 when the dump is complete, 1
// when it failed, 2 for bad usage.
func runDump(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coppice dump", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o, out := dumpFlags(fs, getenv)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		dumpUsage(stdout)
		return 0
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if err == nil {
		err = finishServerFlag(fs, getenv, &o.Target, o.Target.DataDir)
	}
	if err == nil && o.Target.Database == "" {
		err = errors.New("no database: set --db")
	}
	if err != nil {
		fmt.Fprintf(stderr, "coppice dump: %v\n", err)
		return 2
	}
	o.Out = stdout
	var f *os.File
	if *out != "-" {
		// The dump goes to a file beside --out, renamed to it once
		// complete: an incomplete dump never takes the place of a file.
		if f, err = os.CreateTemp(filepath.Dir(*out), filepath.Base(*out)+".*.partial"); err != nil {
			fmt.Fprintf(stderr, "coppice dump: %v\n", err)
			return 1
		}
		o.Out = f
	}
	ctx, stop := interruptible()
	defer stop()
	sum, err := transfer.Dump(ctx, *o)
	if f != nil {
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), *out)
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "coppice dump: %v\n", err)
		return 1
	}
	kept := ""
	if len(sum.Branches) > 0 {
		kept = ", branches " + strings.Join(sum.Branches, ", ")
	}
	fmt.Fprintf(stderr, "dump: database %s%s, %s in %s\n", sum.Database, kept, humanBytes(sum.Bytes), sum.Took.Round(1e6))
	return 0
}

// loadFlags declares the flags of `coppice load`.
func loadFlags(fs *flag.FlagSet, getenv func(string) string) *transfer.LoadOptions {
	o := &transfer.LoadOptions{}
	databaseFlags(fs, getenv, &o.Target, "name of the new database; default the dumped database's")
	fs.StringVar(&o.Region, "region", "", "region of the new database; default the dumped database's")
	return o
}

// runLoad runs `coppice load`: exit status 0 when the database is
// created, 1 when it failed, 2 for bad usage.
func runLoad(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coppice load", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := loadFlags(fs, getenv)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		loadUsage(stdout)
		return 0
	}
	if err == nil && fs.NArg() != 1 {
		err = errors.New("want one dump file (- for standard input) after the flags")
	}
	if err == nil {
		err = finishServerFlag(fs, getenv, &o.Target, o.Target.DataDir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "coppice load: %v\n", err)
		return 2
	}
	o.In, o.InSize = os.Stdin, -1
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "coppice load: %v\n", err)
			return 1
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			o.InSize = fi.Size()
		}
		o.In = f
	}
	ctx, stop := interruptible()
	defer stop()
	sum, err := transfer.Load(ctx, *o)
	if err != nil {
		fmt.Fprintf(stderr, "coppice load: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "load: created database %s in region %s, %s in %s\n", sum.Database, sum.Region, humanBytes(sum.Bytes), sum.Took.Round(1e6))
	return 0
}

// dumpUsage documents `coppice dump`.
func dumpUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: coppice dump --db NAME [--branch B] [flags]

Writes one database to a versioned dump file: every branch with its
lineage, schema, migrations, records and files, and the git branch
mapping, from one snapshot. coppice load recreates it under any name, on
this server or another. From a server over HTTP with an API key
(GET /dbs/{db}/dump), or from a data directory no server holds (--data).
The dump is checked as it is written: one cut short is an error, and
--out is written only once the dump is complete.

Flags of dump (a flag wins over its environment variable):
`)
	fs := flag.NewFlagSet("coppice dump", flag.ContinueOnError)
	dumpFlags(fs, func(string) string { return "" })
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// loadUsage documents `coppice load`.
func loadUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: coppice load [--db NAME] [flags] FILE   (FILE - reads standard input)

Creates a database from a dump that coppice dump wrote, all or nothing:
over HTTP with an API key (POST /dbs/{db}/load; the server bounds a dump
with --max-load), or into a data directory no server holds (--data). The
name must be free.

Flags of load (a flag wins over its environment variable):
`)
	fs := flag.NewFlagSet("coppice load", flag.ContinueOnError)
	loadFlags(fs, func(string) string { return "" })
	fs.SetOutput(w)
	fs.PrintDefaults()
}
