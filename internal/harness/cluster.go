package harness

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
)

// StartAll starts several servers at once and waits until each answers:
// the nodes of a cluster, each of which waits for a majority of the others
// before it is ready. It fails the test if any does not start.
func StartAll(t testing.TB, servers ...*Server) {
	t.Helper()
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.start()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start node %d: %v\nlog:\n%s", i+1, err, servers[i].LastLog())
		}
	}
}

// RunOn is Run with writer w sending its requests through clients[w %
// len(clients)]: the writers of a cluster spread over its nodes.
func (l *Ledger) RunOn(ctx context.Context, clients []*Client, seed uint64) {
	var wg sync.WaitGroup
	for w := range l.owned {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			c := clients[w%len(clients)]
			for ctx.Err() == nil && l.step(c, w, rng) {
			}
		}()
	}
	wg.Wait()
}

// DataDir is the server's data directory.
func (s *Server) DataDir() string { return filepath.Join(s.cfg.Dir, "data") }
