package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coppice-db/coppice/bench/gen"
)

// postgres is a PostgreSQL cluster of the suite's own, on a loopback port
// and a socket directory under the work directory.
type postgres struct {
	bin     string // directory of the server binaries
	dir     string // data directory
	port    int
	logPath string
	version string
}

// pgSettings tune the server comparably to Coppice: durable commits, a
// buffer cache of Pebble's default block cache size, room for index
// builds, and no JIT (which slows short queries).
var pgSettings = []string{
	"listen_addresses=127.0.0.1",
	"synchronous_commit=on",
	"fsync=on",
	"shared_buffers=256MB",
	"work_mem=64MB",
	"maintenance_work_mem=512MB",
	"max_wal_size=4GB",
	"checkpoint_timeout=30min",
	"max_connections=200",
	"jit=off",
}

// findPostgres returns the binary directory of the newest installed
// PostgreSQL.
func findPostgres() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "postgres")); err == nil {
			return dirs[i], nil
		}
	}
	return "", errors.New("no PostgreSQL under /usr/lib/postgresql (bench/run.sh installs it)")
}

// command runs a server binary as the postgres user when the suite runs as
// root, since PostgreSQL refuses to run as root.
func (p *postgres) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(p.bin, name)
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// start makes a fresh cluster in dir and starts it.
func startPostgres(work string) (*postgres, error) {
	bin, err := findPostgres()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, portText, _ := strings.Cut(addr, ":")
	port, _ := strconv.Atoi(portText)
	p := &postgres{bin: bin, dir: filepath.Join(work, "pg"), port: port, logPath: filepath.Join(work, "pg", "server.log")}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "postgres:postgres", p.dir).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("chown %s: %v: %s", p.dir, err, out)
		}
	}
	if out, err := p.command("initdb", "-D", filepath.Join(p.dir, "data"), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--no-locale").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	opts := "-p " + portText + " -k " + p.dir
	for _, s := range pgSettings {
		opts += " -c " + s
	}
	if out, err := p.command("pg_ctl", "-D", filepath.Join(p.dir, "data"), "-l", p.logPath, "-w", "-t", "120",
		"-o", opts, "start").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	if out, err := p.command("postgres", "--version").Output(); err == nil {
		p.version = strings.TrimSpace(string(out))
	}
	return p, nil
}

// stop shuts the cluster down.
func (p *postgres) stop() error {
	out, err := p.command("pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "fast", "-w", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// url is the connection string of a database.
func (p *postgres) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, db)
}

// pool opens a connection pool on a database.
func (p *postgres) pool(ctx context.Context, db string, conns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(p.url(db))
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conns)
	cfg.MinConns = int32(conns)
	return pgxpool.NewWithConfig(ctx, cfg)
}

// pgSchema is the schema of the dataset, without indexes, for the copy.
const pgSchema = `
CREATE TABLE users (id text NOT NULL, name text, email text);
CREATE TABLE docs (
	id text NOT NULL, title text, body text, category text, tags text[],
	price double precision, rating double precision, views bigint,
	created_at timestamptz, active boolean, owner text
);`

// pgIndexes are built after the copy: the text search vector of title and
// body as a stored generated column (a rewrite of the table), primary keys,
// btree on every filter column, GIN on the tags array and on the vector.
var pgIndexes = []string{
	`ALTER TABLE docs ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', coalesce(title, '') || ' ' || coalesce(body, ''))) STORED`,
	`ALTER TABLE users ADD PRIMARY KEY (id)`,
	`ALTER TABLE docs ADD PRIMARY KEY (id)`,
	`CREATE INDEX ON docs (category)`,
	`CREATE INDEX ON docs (price)`,
	`CREATE INDEX ON docs (rating)`,
	`CREATE INDEX ON docs (views)`,
	`CREATE INDEX ON docs (created_at)`,
	`CREATE INDEX ON docs (active)`,
	`CREATE INDEX ON docs (owner)`,
	`CREATE INDEX ON docs USING gin (tags)`,
	`CREATE INDEX ON docs USING gin (tsv)`,
	`ANALYZE`,
}

// docColumns are the columns COPY fills and queries return.
var docColumns = []string{"id", "title", "body", "category", "tags", "price", "rating", "views", "created_at", "active", "owner"}

// pgLoad creates database db, copies users and n docs into it, then builds
// the indexes; it returns the copy and index times.
func (s *suite) pgLoad(ctx context.Context, p *postgres, db string, n int) (copyTime, indexTime time.Duration, err error) {
	admin, err := pgx.Connect(ctx, p.url("postgres"))
	if err != nil {
		return 0, 0, err
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE "+db)
	admin.Close(ctx)
	if err != nil {
		return 0, 0, err
	}
	conn, err := pgx.Connect(ctx, p.url(db))
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, pgSchema); err != nil {
		return 0, 0, err
	}
	var users [][]any
	for _, u := range s.ds.users() {
		users = append(users, []any{u["id"], u["name"], u["email"]})
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"users"}, []string{"id", "name", "email"}, pgx.CopyFromRows(users)); err != nil {
		return 0, 0, err
	}
	src, err := s.ds.copyLines(n)
	if err != nil {
		return 0, 0, err
	}
	defer src.Close()
	t0 := time.Now()
	tag, err := conn.PgConn().CopyFrom(ctx, src, "COPY docs ("+strings.Join(docColumns, ", ")+") FROM STDIN")
	if err != nil {
		return 0, 0, err
	}
	if tag.RowsAffected() != int64(n) {
		return 0, 0, fmt.Errorf("copied %d docs, want %d", tag.RowsAffected(), n)
	}
	copyTime = time.Since(t0)
	t1 := time.Now()
	for _, q := range pgIndexes {
		if _, err := conn.Exec(ctx, q); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", q, err)
		}
	}
	return copyTime, time.Since(t1), nil
}

// runPostgres loads the dataset into a fresh cluster and runs W1–W6.
func (s *suite) runPostgres() error {
	ctx := context.Background()
	p, err := startPostgres(s.cfg.work)
	if err != nil {
		return err
	}
	defer p.stop()
	s.pgVersion = p.version
	logf("postgresql: %s on port %d; loading %d docs", p.version, p.port, s.ds.n)
	copyTime, indexTime, err := s.pgLoad(ctx, p, benchDB, s.ds.n)
	if err != nil {
		return fmt.Errorf("W1: %w", err)
	}
	n := s.ds.n
	s.rep.add("W1", "COPY, no index", sysPG, Summary{N: n, Elapsed: copyTime, Rate: float64(n) / copyTime.Seconds(), Unit: "docs/s"},
		"one COPY stream (text format, from a file)")
	s.rep.add("W1", "index builds after COPY", sysPG, Summary{N: 1, P50: indexTime, P99: indexTime, Elapsed: indexTime}, "stored tsvector column, primary keys, 7 btree, 2 GIN, ANALYZE")
	total := copyTime + indexTime
	s.rep.add("W1", "bulk insert, everything indexed", sysPG, Summary{N: n, Elapsed: total, Rate: float64(n) / total.Seconds(), Unit: "docs/s"},
		"COPY, then the index builds")
	if _, _, err := s.pgLoad(ctx, p, smallDB, smallN); err != nil {
		return fmt.Errorf("load %s: %w", smallDB, err)
	}
	pool, err := p.pool(ctx, benchDB, s.cfg.pgConns)
	if err != nil {
		return err
	}
	if err := pool.QueryRow(ctx, "SELECT pg_database_size($1)", benchDB).Scan(&s.pgDisk); err != nil {
		pool.Close()
		return err
	}
	s.try("W2 postgresql", func() error { return s.pgW2(ctx, pool) })
	s.try("W3 postgresql", func() error { return s.pgW3(ctx, pool) })
	s.try("W4 postgresql", func() error { return s.pgW4(ctx, pool) })
	s.try("W5 postgresql", func() error { return s.pgW5(ctx, pool) })
	pool.Close()
	s.try("W6 postgresql", func() error { return s.pgW6(ctx, p) })
	return nil
}

// pgW2 runs prepared point selects by primary key with the suite's
// client count over the pool.
func (s *suite) pgW2(ctx context.Context, pool *pgxpool.Pool) error {
	q := "SELECT " + strings.Join(docColumns, ", ") + " FROM docs WHERE id = $1"
	get := func(n, offset int) (series, error) {
		return measure(n, s.cfg.conns, func(_, i int) error {
			rows, err := pool.Query(ctx, q, gen.DocID(docIndex(offset+i, s.ds.n)))
			if err != nil {
				return err
			}
			vals := 0
			for rows.Next() {
				v, err := rows.Values()
				if err != nil {
					return err
				}
				vals += len(v)
			}
			if vals == 0 {
				return fmt.Errorf("no row")
			}
			return rows.Err()
		})
	}
	if _, err := get(min(s.cfg.gets/10, 5000), 0); err != nil {
		return err
	}
	sr, err := get(s.cfg.gets, 0)
	if err != nil {
		return err
	}
	s.rep.add("W2", "point get", sysPG, sr.summary("req/s"),
		fmt.Sprintf("prepared select by primary key; %d clients over a pool of %d connections", s.cfg.conns, s.cfg.pgConns))
	return nil
}

// pgSelect runs a query on one connection and reads every row.
func pgSelect(ctx context.Context, conn *pgxpool.Conn, q string, args []any) ([][]any, error) {
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// pgW3 runs the filter/sort mix and keyset walks on one connection.
func (s *suite) pgW3(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	type stmt struct {
		sql  string
		args []any
	}
	stmts := make([]stmt, len(s.ds.q.Filter))
	for i, q := range s.ds.q.Filter {
		sql, args, err := sqlQuery(strings.Join(docColumns, ", "), q.Filter, q.Sort)
		if err != nil {
			return fmt.Errorf("%s: %w", q.Kind, err)
		}
		stmts[i] = stmt{sql, args}
	}
	byKind, _, err := s.runMix(s.cfg.reps, nil, func(_ string, i int) error {
		_, err := pgSelect(ctx, conn, stmts[i].sql, stmts[i].args)
		return err
	})
	if err != nil {
		return err
	}
	s.addMix(sysPG, byKind, "prepared; $contains as ILIKE")
	return s.cursorWalks(sysPG, func(q cursorQuery) (time.Duration, time.Duration, error) {
		return pgKeysetWalk(ctx, conn, q)
	}, nil)
}

// pgKeysetWalk fetches page 1 of q, then pages by keyset (sort value, id)
// to page 50, and returns the times of page 1 and of page 50.
func pgKeysetWalk(ctx context.Context, conn *pgxpool.Conn, q cursorQuery) (time.Duration, time.Duration, error) {
	raw, _ := json.Marshal(q.filter)
	var args []any
	where, err := sqlFilter(raw, &args)
	if err != nil {
		return 0, 0, err
	}
	dir, cmp := "ASC", ">"
	if q.desc {
		dir, cmp = "DESC", "<"
	}
	cols := q.sortCol + ", " + strings.Join(docColumns, ", ")
	order := fmt.Sprintf(" ORDER BY %s %s, id %s LIMIT %d", q.sortCol, dir, dir, pageSize)
	first := "SELECT " + cols + " FROM docs WHERE " + where + order
	next := fmt.Sprintf("SELECT %s FROM docs WHERE %s AND (%s, id) %s ($%d, $%d)%s", cols, where, q.sortCol, cmp, len(args)+1, len(args)+2, order)
	var p1, p50 time.Duration
	var last []any
	for page := 1; page <= cursorPages; page++ {
		sql, a := first, args
		if page > 1 {
			sql, a = next, append(slices.Clone(args), last[0], last[1])
		}
		t0 := time.Now()
		rows, err := pgSelect(ctx, conn, sql, a)
		d := time.Since(t0)
		if err != nil {
			return 0, 0, err
		}
		if page == 1 {
			p1 = d
		}
		p50 = d
		if len(rows) < pageSize && page < cursorPages {
			return 0, 0, fmt.Errorf("only %d pages", page)
		}
		last = rows[len(rows)-1]
	}
	return p1, p50, nil
}

// pgW4 times the GROUP BY of W4.
func (s *suite) pgW4(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	bound := summarizeFilter()["price"].(map[string]any)["$lt"].(float64)
	var groups int
	sr, err := s.timeReps(s.cfg.reps*2, func() error {
		rows, err := pgSelect(ctx, conn, summarizeSQL, []any{bound})
		groups = len(rows)
		return err
	})
	if err != nil {
		return err
	}
	s.rep.add("W4", "group by category, 5 aggregates", sysPG, sr.summary("q/s"), fmt.Sprintf("GROUP BY; %d groups", groups))
	return nil
}

// pgSearchSQL ranks the matches of a text query and highlights the top 20.
var pgSearchSQL = fmt.Sprintf(`SELECT id, ts_headline('simple', title, q), ts_headline('simple', body, q)
FROM (SELECT id, title, body, q, ts_rank(tsv, q) AS r FROM docs, to_tsquery('simple', $1) q
      WHERE tsv @@ q ORDER BY r DESC LIMIT %d) t
ORDER BY r DESC`, pageSize)

// pgW5 runs each search class as a ranked text query.
func (s *suite) pgW5(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	for _, c := range s.ds.searchClasses() {
		qs := c.queries[:min(len(c.queries), s.cfg.search)]
		if _, err := pgSelect(ctx, conn, pgSearchSQL, []any{c.tsquery(qs[0])}); err != nil {
			return err
		}
		sr, err := sequential(len(qs), func(i int) error {
			_, err := pgSelect(ctx, conn, pgSearchSQL, []any{c.tsquery(qs[i])})
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		note := "tsvector @@ tsquery, ts_rank, ts_headline on the top 20"
		if c.fuzziness > 0 {
			note += "; no typo tolerance: the misspelt word as written"
		}
		s.rep.add("W5", c.name, sysPG, sr.summary("q/s"), note)
	}
	return nil
}

// pgW6 times CREATE DATABASE … TEMPLATE at 1k and at N docs.
func (s *suite) pgW6(ctx context.Context, p *postgres) error {
	conn, err := pgx.Connect(ctx, p.url("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	copyDB := func(from string, reps int) (series, error) {
		var out series
		for i := range reps {
			name := fmt.Sprintf("%s_copy%d", from, i)
			t0 := time.Now()
			if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+from); err != nil {
				return out, err
			}
			d := time.Since(t0)
			out.add(series{lat: []time.Duration{d}, elapsed: d})
			if _, err := conn.Exec(ctx, "DROP DATABASE "+name); err != nil {
				return out, err
			}
		}
		return out, nil
	}
	small, err := copyDB(smallDB, 5)
	if err != nil {
		return err
	}
	big, err := copyDB(benchDB, 3)
	if err != nil {
		return err
	}
	s.rep.add("W6", "create branch at 1k", sysPG, small.summary("req/s"), "CREATE DATABASE … TEMPLATE (a full copy)")
	s.rep.add("W6", fmt.Sprintf("create branch at %d", s.ds.n), sysPG, big.summary("req/s"), "CREATE DATABASE … TEMPLATE (a full copy)")
	return nil
}
