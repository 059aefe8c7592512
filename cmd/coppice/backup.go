package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/coppice-db/coppice/api"
	"github.com/coppice-db/coppice/cmd/coppice/internal/transfer"
)

// envOr returns an environment lookup that falls back to def.
func envOr(getenv func(string) string) func(name, def string) string {
	return func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
}

// serverFlag declares --url and --api-key: a server and the key to call it
// with. The key has no flag default, so help never prints it.
func serverFlag(fs *flag.FlagSet, getenv func(string) string, t *transfer.Target, keyWhat string) {
	fs.StringVar(&t.URL, "url", envOr(getenv)("COPPICE_URL", "http://127.0.0.1:8080"), "server URL (env COPPICE_URL)")
	fs.StringVar(&t.APIKey, "api-key", "", keyWhat+", never printed; better set in the environment, which the process list does not show (env COPPICE_API_KEY)")
}

// finishServerFlag completes --api-key from the environment and refuses
// --url with --data.
func finishServerFlag(fs *flag.FlagSet, getenv func(string) string, t *transfer.Target, dataDir string) error {
	if t.APIKey == "" {
		t.APIKey = getenv("COPPICE_API_KEY")
	}
	if dataDir != "" {
		urlSet := false
		fs.Visit(func(fl *flag.Flag) { urlSet = urlSet || fl.Name == "url" })
		if urlSet {
			return errors.New("--data and --url exclude each other: a data directory is opened without a server")
		}
	}
	return nil
}

// backupFlags declares the flags of `coppice backup`.
func backupFlags(fs *flag.FlagSet, getenv func(string) string) *transfer.BackupOptions {
	o := &transfer.BackupOptions{Program: api.ReadBuildInfo().Version}
	serverFlag(fs, getenv, &o.Source, "API key of the server administrator")
	fs.StringVar(&o.Source.DataDir, "data", "", "back up this data directory instead of a server; refused while a server holds it")
	fs.StringVar(&o.To, "to", "", "directory of the backup: missing or empty (required)")
	return o
}

// runBackup runs `coppice backup`: exit status 0 when the backup is
// complete, 1 when it failed, 2 for bad usage.
func runBackup(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coppice backup", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := backupFlags(fs, getenv)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		backupUsage(stdout)
		return 0
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if err == nil {
		err = finishServerFlag(fs, getenv, &o.Source, o.Source.DataDir)
	}
	if err == nil && o.To == "" {
		err = errors.New("no backup directory: set --to")
	}
	if err != nil {
		fmt.Fprintf(stderr, "coppice backup: %v\n", err)
		return 2
	}
	ctx, stop := interruptible()
	defer stop()
	sum, err := transfer.Backup(ctx, *o)
	if err != nil {
		fmt.Fprintf(stderr, "coppice backup: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "backup: %d files, %s in %s, into %s\n", sum.Files, humanBytes(sum.Bytes), sum.Took.Round(1e6), o.To)
	return 0
}

// restoreFlags declares the flags of `coppice restore`.
func restoreFlags(fs *flag.FlagSet) (from, data *string) {
	from = fs.String("from", "", "directory of a backup that coppice backup took (required)")
	data = fs.String("data", "", "data directory to make: missing or empty (required)")
	return from, data
}

// runRestore runs `coppice restore`: exit status 0 when the data
// directory is made and opens, 1 when it failed, 2 for bad usage.
func runRestore(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coppice restore", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	from, data := restoreFlags(fs)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		restoreUsage(stdout)
		return 0
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if err == nil && (*from == "" || *data == "") {
		err = errors.New("set --from (a backup) and --data (the data directory to make)")
	}
	if err != nil {
		fmt.Fprintf(stderr, "coppice restore: %v\n", err)
		return 2
	}
	ctx, stop := interruptible()
	defer stop()
	sum, err := transfer.Restore(ctx, *from, *data)
	if err != nil {
		fmt.Fprintf(stderr, "coppice restore: %v\n", err)
		return 1
	}
	databases := "databases"
	if sum.Databases == 1 {
		databases = "database"
	}
	fmt.Fprintf(stderr, "restore: %d files, %s in %s, into %s; it opens with %d %s\n",
		sum.Files, humanBytes(sum.Bytes), sum.Took.Round(1e6), *data, sum.Databases, databases)
	return 0
}

// backupUsage documents `coppice backup`.
func backupUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: coppice backup --to DIR [flags]

Takes a consistent backup of a whole server, every workspace and database,
as of one moment, into DIR (missing or empty): from a running server over
HTTP with the administrator's API key (POST /admin/backup; writes pause
only for a moment), or from a data directory no server holds (--data).
Every file is checked against the backup's manifest of SHA-256 sums, which
the backup keeps (coppice-backup.json). coppice restore makes a data
directory of it.

Flags of backup (a flag wins over its environment variable):
`)
	fs := flag.NewFlagSet("coppice backup", flag.ContinueOnError)
	backupFlags(fs, func(string) string { return "" })
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// restoreUsage documents `coppice restore`.
func restoreUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: coppice restore --from DIR --data DIR

Makes a data directory (missing or empty) from a backup: checks every file
against the backup's manifest, copies it, and opens the result to make sure
it is whole. Start coppice serve on it.

Flags of restore:
`)
	fs := flag.NewFlagSet("coppice restore", flag.ContinueOnError)
	restoreFlags(fs)
	fs.SetOutput(w)
	fs.PrintDefaults()
}
