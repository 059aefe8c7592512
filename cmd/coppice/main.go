// Command coppice runs the Coppice database service, moves records
// between files and its tables, and backs up and restores servers and
// databases.
//
//	coppice serve [flags]
//	coppice import [flags] FILE
//	coppice export [flags]
//	coppice backup --to DIR [flags]
//	coppice restore --from DIR --data DIR
//	coppice dump --db NAME [--branch B] [flags]
//	coppice load [--db NAME] [flags] FILE
//	coppice cluster status|add-node|remove-node|digest
//	coppice version
//	coppice healthcheck [--url URL]
//
// Every flag has an environment variable; a flag given on the command line
// wins over its variable. See `coppice --help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/coppice-db/coppice/api"
	"github.com/coppice-db/coppice/engine"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	case "version", "-version", "--version":
		fmt.Fprint(stdout, api.ReadBuildInfo())
		return 0
	case "healthcheck":
		return healthcheck(args[1:], getenv, stderr)
	case "serve":
		return runServe(args[1:], getenv, stdout, stderr)
	case "import":
		return runImport(args[1:], getenv, stdout, stderr)
	case "export":
		return runExport(args[1:], getenv, stdout, stderr)
	case "backup":
		return runBackup(args[1:], getenv, stdout, stderr)
	case "restore":
		return runRestore(args[1:], stdout, stderr)
	case "dump":
		return runDump(args[1:], getenv, stdout, stderr)
	case "load":
		return runLoad(args[1:], getenv, stdout, stderr)
	case "cluster":
		return runCluster(args[1:], getenv, stdout, stderr)
	}
	fmt.Fprintf(stderr, "coppice: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

// runServe runs `coppice serve` until SIGINT or SIGTERM.
func runServe(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	opts, err := serveOptions(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "coppice serve: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, opts, stdout, nil); err != nil {
		fmt.Fprintf(stderr, "coppice serve: %v\n", err)
		return 1
	}
	return 0
}

// serveFlags declares the flags of `coppice serve`, each defaulting to its
// environment variable, else to the built-in default.
func serveFlags(fs *flag.FlagSet, getenv func(string) string) (*serveConfig, func() error) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	cfg := &serveConfig{BootstrapKey: getenv("COPPICE_BOOTSTRAP_KEY")}
	o := &cfg.API
	var regions, domains, maxBody, cacheSize, memLimit, recordCache, slow, compactIdle, minFree string
	fs.StringVar(&cfg.Addr, "addr", env("COPPICE_ADDR", "127.0.0.1:8080"), "listen address (env COPPICE_ADDR)")
	fs.StringVar(&cfg.DataDir, "data", env("COPPICE_DATA", "./data"), "data directory, created if missing (env COPPICE_DATA)")
	fs.StringVar(&o.Compat, "compat", env("COPPICE_COMPAT", api.CompatNone),
		"wire compatibility: none, or xata for the legacy Xata SDKs (metadata key \"xata\", Xata page limits) (env COPPICE_COMPAT)")
	fs.StringVar(&regions, "regions", env("COPPICE_REGIONS", ""),
		"comma-separated region ids databases may be created in; default \"local\", or the five legacy Xata regions with --compat xata (env COPPICE_REGIONS)")
	fs.StringVar(&domains, "domains", env("COPPICE_DOMAINS", "localhost"),
		"comma-separated domains of the workspace host form {workspace}.{region}.{domain} (env COPPICE_DOMAINS)")
	fs.StringVar(&maxBody, "max-body", env("COPPICE_MAX_BODY", formatByteSize(api.DefaultMaxBody)),
		"request body limit, a byte size such as 32MiB; larger bodies get 413 (env COPPICE_MAX_BODY)")
	fs.StringVar(&memLimit, "memory-limit", env("COPPICE_MEMORY_LIMIT", formatByteSize(defaultMemoryLimit())),
		"memory the server may take, a byte size such as 2GiB: the storage cache, the in-memory column stores, indexes and caches (evicted least recently used first past their share) and requests in flight; the Go runtime's limit follows it (default: half the machine's or the container's memory) (env COPPICE_MEMORY_LIMIT)")
	fs.StringVar(&cacheSize, "cache-size", env("COPPICE_CACHE_SIZE", ""),
		"storage block cache, a byte size such as 512MiB, taken from --memory-limit; more keeps more records in memory (default: an eighth of --memory-limit, at most "+formatByteSize(engine.DefaultCacheSize)+") (env COPPICE_CACHE_SIZE)")
	fs.StringVar(&recordCache, "record-cache-size", env("COPPICE_RECORD_CACHE_SIZE", formatByteSize(api.DefaultRecordCacheSize)),
		"records point reads keep as read, and again their encodings, a byte size such as 64MiB: a hot record is answered without reading or encoding it; 0 turns it off (env COPPICE_RECORD_CACHE_SIZE)")
	fs.StringVar(&compactIdle, "compact-idle", env("COPPICE_COMPACT_IDLE", engine.DefaultCompactIdle.String()),
		"pause in a table's writes after which, once it took a bulk's worth of rows, its storage is compacted in the background so that reads are as fast as on a compacted store, e.g. 5s; 0 turns it off (env COPPICE_COMPACT_IDLE)")
	fs.StringVar(&minFree, "min-free-space", env("COPPICE_MIN_FREE_SPACE", formatByteSize(engine.DefaultMinFreeSpace)),
		"room kept free on the data directory's disk, a byte size such as 1GiB: with less available, writes get 503 and /healthz says why, until space is freed; 0 turns the check off (env COPPICE_MIN_FREE_SPACE)")
	limits := limitFlags(fs, env)
	cluster := clusterFlags(fs, env)
	fs.StringVar(&o.LogLevel, "log-level", env("COPPICE_LOG_LEVEL", "info"),
		"log level: debug, info (one access line per request), warn or error (env COPPICE_LOG_LEVEL)")
	fs.StringVar(&o.LogFormat, "log-format", env("COPPICE_LOG_FORMAT", api.LogFormatText), "log format: text or json (env COPPICE_LOG_FORMAT)")
	fs.StringVar(&slow, "slow-request", env("COPPICE_SLOW_REQUEST", api.DefaultSlowRequest.String()),
		"log requests slower than this again at warn level, e.g. 500ms or 2s; 0 turns it off (env COPPICE_SLOW_REQUEST)")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", env("COPPICE_METRICS_ADDR", ""),
		"serve Prometheus metrics at /metrics on this address, e.g. 127.0.0.1:9090; empty: off (env COPPICE_METRICS_ADDR)")
	fs.StringVar(&o.PublicURL, "public-url", env("COPPICE_PUBLIC_URL", ""),
		"base of the file URLs records hand out, as clients reach the server; default http://<addr> (env COPPICE_PUBLIC_URL)")
	finish := func() error {
		if o.PublicURL == "" {
			o.PublicURL = "http://" + cfg.Addr
		}
		if u, err := url.Parse(o.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--public-url must be an http or https URL, got %q", o.PublicURL)
		}
		o.Regions = splitList(regions)
		o.Domains = splitList(domains)
		n, err := parseByteSize(maxBody)
		if err != nil || n <= 0 || n > math.MaxInt32 {
			return fmt.Errorf("--max-body must be a positive byte size below 2GiB, got %q", maxBody)
		}
		o.MaxBody = int(n)
		m, err := parseByteSize(memLimit)
		if err != nil || m < minMemoryLimit {
			return fmt.Errorf("--memory-limit must be a byte size of at least %s, got %q", formatByteSize(minMemoryLimit), memLimit)
		}
		cfg.MemoryLimit = m
		if cacheSize != "" {
			c, err := parseByteSize(cacheSize)
			if err != nil || c <= 0 || c > m/2 {
				return fmt.Errorf("--cache-size must be a positive byte size of at most half of --memory-limit, got %q", cacheSize)
			}
			cfg.CacheSize = c
		}
		rc, err := parseByteSize(recordCache)
		if err != nil || rc < 0 || rc > math.MaxInt32 {
			return fmt.Errorf("--record-cache-size must be a byte size below 2GiB, or 0 for off, got %q", recordCache)
		}
		o.RecordCacheSize = int(rc)
		if rc == 0 {
			o.RecordCacheSize = -1 // off
		}
		switch o.LogFormat {
		case api.LogFormatText, api.LogFormatJSON:
		default:
			return fmt.Errorf("--log-format must be text or json, got %q", o.LogFormat)
		}
		d, err := time.ParseDuration(strings.TrimSpace(slow))
		if err != nil || d < 0 {
			return fmt.Errorf("--slow-request must be a duration such as 500ms, or 0 for off, got %q", slow)
		}
		o.SlowRequest = d
		if d == 0 {
			o.SlowRequest = -1 // off
		}
		if cfg.CompactIdle, err = time.ParseDuration(strings.TrimSpace(compactIdle)); err != nil || cfg.CompactIdle < 0 {
			return fmt.Errorf("--compact-idle must be a duration such as 5s, or 0 for off, got %q", compactIdle)
		}
		if cfg.CompactIdle == 0 {
			cfg.CompactIdle = -1 // off
		}
		if cfg.MinFreeSpace, err = parseByteSize(minFree); err != nil || cfg.MinFreeSpace < 0 {
			return fmt.Errorf("--min-free-space must be a byte size such as 1GiB, or 0 for off, got %q", minFree)
		}
		if cfg.MinFreeSpace == 0 {
			cfg.MinFreeSpace = -1 // off
		}
		if o.Limits, err = limits(o.MaxBody); err != nil {
			return err
		}
		cfg.Cluster, err = cluster(cfg.Addr)
		return err
	}
	return cfg, finish
}

// serveOptions parses the arguments of `coppice serve`.
func serveOptions(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	fs := flag.NewFlagSet("coppice serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg, finish := serveFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return serveConfig{}, err
	}
	if fs.NArg() > 0 {
		return serveConfig{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if err := finish(); err != nil {
		return serveConfig{}, err
	}
	return *cfg, nil
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// usage documents the commands and every flag.
func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: coppice <command> [flags]

Commands:
  serve        run the HTTP service (both API planes on one listener)
  import       load NDJSON, a JSON array or CSV into a table: coppice import [flags] FILE
  export       write a table, or a query's result, as NDJSON: coppice export [flags]
  backup       back up a whole server, online, or a data directory: coppice backup --to DIR [flags]
  restore      make a data directory from a backup: coppice restore --from DIR --data DIR
  dump         write one database to a versioned file: coppice dump --db NAME [--branch B] [flags]
  load         create a database from a dump: coppice load [--db NAME] [flags] FILE
  cluster      show a cluster, add or remove a node: coppice cluster help
  version      show the version, commit and Go version (also --version)
  healthcheck  exit 0 if a local server's /healthz answers 200, else 1
               (for container health checks; --url, default from COPPICE_ADDR)
  help         show this help

Flags of serve (a flag wins over its environment variable):
`)
	fs := flag.NewFlagSet("coppice serve", flag.ContinueOnError)
	serveFlags(fs, func(string) string { return "" })
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, `
Environment only:
  COPPICE_BOOTSTRAP_KEY
    	on the first start (empty data directory) the server creates an admin
    	user, a workspace and an API key and prints them once; when set, this
    	is the API key instead of a generated one (at least 16 characters)

Byte sizes are a number of bytes or a number with a unit: B, KiB, MiB, GiB,
TiB (powers of 1024; also K, M, G, T), KB, MB, GB, TB (powers of 1000).
Durations are Go durations such as 30s, 2m or 1m30s.

Health: GET /healthz answers 200 while the server is alive; GET /readyz answers
200 once it serves and 503 from the start of a shutdown; both answer 503 with
the reason once the storage failed (a full disk) and writes are refused until
a restart; neither needs a key.
GET /openapi.json describes the API. SIGINT or SIGTERM cancels the requests in
flight, closes the connections and then the data directory, all within
--shutdown-timeout, and exits 0.
`)
	importUsage(w)
	fmt.Fprintln(w)
	exportUsage(w)
	fmt.Fprintln(w)
	backupUsage(w)
	fmt.Fprintln(w)
	restoreUsage(w)
	fmt.Fprintln(w)
	dumpUsage(w)
	fmt.Fprintln(w)
	loadUsage(w)
}
