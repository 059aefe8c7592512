package codec

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The package graph of DESIGN.md §1, stated once: which unit may import
// which. A unit is a package with the packages below it that have no rule
// of their own (index/vector is part of index). Packages import freely
// inside their own unit.
//
//	cmd → api → engine → {index, fts} → codec
//
// and, inside the engine, its machinery under engine/internal, which only
// the engine's facade imports:
//
//	model    the leaf: schemas, branches, values, errors; no other part
//	files    file contents and access ids          → model
//	catalog  accounts, placements, their commands   → model
//	layers   copy-on-write reads, range copies      → model, files
//	apply    the one write path                     → model, files, layers, catalog
//	memstore derived structures, observers of apply → model, layers, apply
//	consensus Raft groups behind a narrow interface (imports no part)
//	replica  the cluster: groups whose state machines apply through apply
//	                                        → model, layers, catalog, apply, consensus
var allowedImports = map[string][]string{
	"codec": {},
	"index": {"codec"},
	"fts":   {"codec", "index"},

	"engine/internal/model":     {"codec", "index"},
	"engine/internal/files":     {"codec", "engine/internal/model"},
	"engine/internal/catalog":   {"codec", "engine/internal/model"},
	"engine/internal/layers":    {"codec", "fts", "engine/internal/model", "engine/internal/files"},
	"engine/internal/apply":     {"codec", "fts", "index", "engine/internal/model", "engine/internal/files", "engine/internal/layers", "engine/internal/catalog"},
	"engine/internal/memstore":  {"codec", "fts", "index", "engine/internal/model", "engine/internal/layers", "engine/internal/apply"},
	"engine/internal/consensus": {},
	"engine/internal/replica": {"codec", "engine/internal/model", "engine/internal/layers", "engine/internal/catalog",
		"engine/internal/apply", "engine/internal/consensus"},
	"engine": {"codec", "index", "fts", "engine/internal/model", "engine/internal/files", "engine/internal/catalog",
		"engine/internal/layers", "engine/internal/apply", "engine/internal/memstore", "engine/internal/consensus",
		"engine/internal/replica"},

	"console": {},
	// api reads request bodies with the parsers of index and fts, and
	// reaches the engine through its facade only.
	"api":         {"engine", "index", "fts", "codec", "console"},
	"cmd/coppice": {"api", "engine", "cmd/coppice/internal/transfer"},
	// `coppice import`, `export`, `backup`, `restore`, `dump` and
	// `load`: an HTTP client of the API (net/http, never fasthttp) and,
	// for a data directory no server holds, a user of the engine's
	// facade; the formats of dumps and backups are codec's.
	"cmd/coppice/internal/transfer": {"engine", "index", "codec"},
	// Test support that runs the coppice binary: it drives it over
	// HTTP and signals, like an operator, and imports none of it.
	"internal": {},
	// The reliability suite: tests only, over internal/harness.
	"reliability": {"internal"},
}

// libraryOwners names the third-party libraries only some units (and the
// units under them) may import.
var libraryOwners = map[string][]string{
	"github.com/cockroachdb/pebble": {"engine"},
	"github.com/valyala/fasthttp":   {"api"},
	"github.com/fasthttp/router":    {"api"},
	// Metrics: engine and limits hand plain numbers to api.Metrics.
	"github.com/prometheus/client_golang": {"api"},
	"github.com/prometheus/common":        {"api"},
	// The data model of metrics. Besides api, the engine: Pebble's metrics
	// time the syncs of its write-ahead log in a client_golang histogram,
	// which only this model reads, and the engine hands api the count and
	// the sum as plain numbers.
	"github.com/prometheus/client_model": {"api", "engine"},
	// Raft, behind the engine's narrow interface of it.
	"github.com/lni/dragonboat": {"engine/internal/consensus"},
}

// owns reports whether pkg is one of owners or under one of them.
func owns(owners []string, pkg string) bool {
	for _, o := range owners {
		if pkg == o || strings.HasPrefix(pkg, o+"/") {
			return true
		}
	}
	return false
}

// unitOf returns the unit of a module-relative package path: the longest
// rule that is the path or a parent of it, or "" for none.
func unitOf(pkg string) string {
	best := ""
	for u := range allowedImports {
		if (pkg == u || strings.HasPrefix(pkg, u+"/")) && len(u) > len(best) {
			best = u
		}
	}
	return best
}

// TestDependencyDirection keeps the package graph honest: every import
// between the module's packages follows allowedImports, the storage and
// HTTP libraries stay with the units that own them, and every package of
// the engine's machinery has a rule.
func TestDependencyDirection(t *testing.T) {
	const mod = "github.com/coppice-db/coppice/"
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not installed")
	}
	// A failing go list (a go.sum out of step, say) fails the test: a
	// skip would hide that the direction went unchecked.
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", mod+"...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		unit := unitOf(pkg)
		if strings.HasPrefix(pkg, "engine/internal/") && unit == "engine" {
			t.Errorf("%s has no rule: say in allowedImports what it may import", pkg)
		}
		for _, imp := range fields[1:] {
			if rel, ok := strings.CutPrefix(imp, mod); ok {
				dep := unitOf(rel)
				if unit != "" && dep != unit && !slices.Contains(allowedImports[unit], dep) {
					t.Errorf("%s imports %s: not allowed by the dependency direction", pkg, imp)
				}
				continue
			}
			for lib, owners := range libraryOwners {
				if strings.HasPrefix(imp, lib) && !owns(owners, pkg) && !strings.HasPrefix(pkg, "bench") {
					t.Errorf("%s imports %s: only %s may", pkg, imp, strings.Join(owners, " and "))
				}
			}
		}
	}
}

// TestDependencyRules checks the rules themselves: they name only units
// that have rules, form no cycle, and keep the engine's model a leaf and
// the api on the engine's facade.
func TestDependencyRules(t *testing.T) {
	for u, deps := range allowedImports {
		for _, d := range deps {
			if _, ok := allowedImports[d]; !ok {
				t.Errorf("%s may import %s, which has no rule", u, d)
			}
		}
	}
	// Depth-first search for a cycle: 1 while on the path, 2 when done.
	state := map[string]int{}
	var visit func(u string, path []string)
	visit = func(u string, path []string) {
		switch state[u] {
		case 1:
			t.Errorf("the rules have a cycle: %s → %s", strings.Join(path, " → "), u)
			return
		case 2:
			return
		}
		state[u] = 1
		for _, d := range allowedImports[u] {
			visit(d, append(path, u))
		}
		state[u] = 2
	}
	for u := range allowedImports {
		visit(u, nil)
	}
	for _, d := range allowedImports["engine/internal/model"] {
		if strings.HasPrefix(d, "engine/") {
			t.Errorf("engine/internal/model imports %s: the model is the engine's leaf", d)
		}
	}
	for _, d := range allowedImports["api"] {
		if strings.HasPrefix(d, "engine/") {
			t.Errorf("api may import %s: the api reaches the engine through its facade only", d)
		}
	}
}
