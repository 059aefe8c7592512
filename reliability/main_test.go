//go:build unix

// Package reliability drives a real `coppice serve` process through
// crashes, signals and hostile clients, checks that it keeps its promises
// (every acknowledged write survives, bulk requests and transactions are
// all or nothing, cheap requests keep their latency, no API key reaches a
// log or a response), and prints the figures it measured. `go test
// -short` runs a small form of every scenario; `make test-reliability`
// runs the full one. It signals and limits processes as Unix does, so it
// builds on Unix systems only.
package reliability

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coppice-db/coppice/internal/harness"
)

// binary is the coppice executable built for this run.
var binary string

// secrets are the keys and Authorization values of every scenario, checked
// against every response the clients receive and every server log.
var secrets = &harness.Secrets{}

// TestMain builds the binary once, runs the scenarios and prints the table
// of their figures.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "coppice-reliability-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	start := time.Now()
	binary, err = harness.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	fmt.Printf("built coppice in %v\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	texts, size, found := secrets.Stats()
	figures.list = append(figures.list, figure{"all scenarios: logs and responses", "API keys, Authorization values found",
		fmt.Sprintf("%d in %d texts, %.1f MB", len(found), texts, float64(size)/1e6), "0", len(figures.list)})
	if len(found) > 0 {
		code = 1
	}
	printFigures()
	os.RemoveAll(dir)
	os.Exit(code)
}

// figure is one measured number of a scenario.
type figure struct {
	scenario, name, value, target string
	order                         int
}

// figures collects the figures of every scenario, printed at the end.
var figures struct {
	sync.Mutex
	list []figure
}

// report records a figure, logs it to the test and keeps it for the final
// table; target says what it must be, when anything.
func report(t *testing.T, name, value, target string) {
	t.Helper()
	t.Logf("%-34s %-26s %s", name, value, target)
	figures.Lock()
	defer figures.Unlock()
	figures.list = append(figures.list, figure{t.Name(), name, value, target, len(figures.list)})
}

// printFigures prints every figure as a table, by scenario.
func printFigures() {
	figures.Lock()
	defer figures.Unlock()
	if len(figures.list) == 0 {
		return
	}
	sort.SliceStable(figures.list, func(i, j int) bool { return figures.list[i].order < figures.list[j].order })
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-44s %-36s %-26s %s\n", "scenario", "figure", "value", "target")
	fmt.Fprintln(&b, strings.Repeat("-", 130))
	last := ""
	for _, f := range figures.list {
		sc := f.scenario
		if sc == last {
			sc = ""
		}
		last = f.scenario
		fmt.Fprintf(&b, "%-44s %-36s %-26s %s\n", sc, f.name, f.value, f.target)
	}
	fmt.Print(b.String())
}

// startServer starts a server for a test with the shared binary, args on
// top of the suite's defaults, and the test's key among the secrets. At the
// test's end its logs are searched for every secret.
func startServer(t *testing.T, cfg harness.Config) *harness.Server {
	t.Helper()
	cfg.Binary = binary
	if cfg.Key == "" {
		cfg.Key = "cpk_rel_" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "_secret_7f3a9c"
	}
	secrets.Add(cfg.Key)
	cfg.Env = append([]string{"COPPICE_LOG_LEVEL=info"}, cfg.Env...)
	s := harness.New(t, cfg)
	t.Cleanup(func() {
		// The key comes from COPPICE_BOOTSTRAP_KEY: not even the first
		// start prints it.
		secrets.Check(t.Name()+" server log", []byte(s.Logs()))
		if _, _, found := secrets.Stats(); len(found) > 0 {
			t.Errorf("secrets found in logs or responses:\n%s", strings.Join(found, "\n"))
		}
	})
	s.Start()
	return s
}

// client returns a client of s whose responses are searched for secrets.
func client(s *harness.Server) *harness.Client {
	c := s.Client()
	c.Secrets = secrets
	return c
}

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
