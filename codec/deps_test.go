package codec

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyDirection keeps the package graph of DESIGN.md §1 honest:
// cmd → api → engine → {index, fts} → codec, and the storage and HTTP
// libraries each confined to the one package that owns them.
func TestDependencyDirection(t *testing.T) {
	const mod = "github.com/coppice-db/coppice/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", mod+"...").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	allowed := map[string][]string{
		"codec":   {},
		"index":   {"codec"},
		"fts":     {"codec", "index"},
		"engine":  {"codec", "index", "fts"},
		"console": {},
		// api reads request bodies with the parsers of index and fts.
		"api":         {"engine", "index", "fts", "codec", "console"},
		"cmd/coppice": {"api", "engine", "cmd/coppice/internal/transfer"},
		// `coppice import`, `export`, `backup`, `restore`, `dump` and
		// `load`: an HTTP client of the API (net/http, never fasthttp)
		// and, for a data directory no server holds, a user of the
		// engine's facade; the formats of dumps and backups are codec's.
		"cmd/coppice/internal/transfer": {"engine", "index", "codec"},
	}
	// Third-party libraries only one package may import.
	owners := map[string]string{
		"github.com/cockroachdb/pebble": "engine",
		"github.com/valyala/fasthttp":   "api",
		"github.com/fasthttp/router":    "api",
		// Metrics: engine and limits hand plain numbers to api.Metrics.
		"github.com/prometheus/client_golang": "api",
		"github.com/prometheus/common":        "api",
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		top := pkg
		if !strings.HasPrefix(top, "cmd/") {
			top = strings.SplitN(pkg, "/", 2)[0]
		}
		ok, known := allowed[top]
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, mod) {
				rel := strings.TrimPrefix(imp, mod)
				dep := strings.SplitN(rel, "/", 2)[0]
				if strings.HasPrefix(rel, "cmd/") {
					// Packages under cmd/ are named whole, like top.
					dep = rel
				}
				if !known {
					continue
				}
				if !contains(ok, dep) && dep != top {
					t.Errorf("%s imports %s: not allowed by the dependency direction", pkg, imp)
				}
				continue
			}
			for lib, owner := range owners {
				if strings.HasPrefix(imp, lib) && top != owner && !strings.HasPrefix(top, "bench") {
					t.Errorf("%s imports %s: only %s may", pkg, imp, owner)
				}
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
