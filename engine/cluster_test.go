package engine

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDataDirKind checks that a single server's data directory does not
// open as a node of a cluster, nor a node's as a single server: either
// would serve data its groups do not carry. An empty directory opens as
// either.
func TestDataDirKind(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	node := func() *ClusterOptions {
		return &ClusterOptions{NodeID: 1, RaftAddr: "n1", Join: []string{"n1"}, Network: NewClusterNetwork(),
			Tick: 5 * time.Millisecond, HeartbeatTicks: 2, ElectionTicks: 10, MaxWait: 2 * time.Second}
	}
	single := filepath.Join(t.TempDir(), "single")
	e, err := Open(single, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(single, Options{Logger: quiet, Cluster: node()}); err == nil || !strings.Contains(err.Error(), "coppice load") {
		t.Errorf("a single server's data directory opened as a node: %v", err)
	}

	dir := filepath.Join(t.TempDir(), "node")
	e, err = Open(dir, Options{Logger: quiet, Cluster: node()})
	if err != nil {
		t.Fatal(err)
	}
	// Once the node has applied an entry of the catalog's group.
	for deadline := time.Now().Add(10 * time.Second); len(e.Cluster().Nodes()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the node did not register")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{Logger: quiet}); err == nil || !strings.Contains(err.Error(), "--node-id") {
		t.Errorf("a node's data directory opened as a single server: %v", err)
	}
	e, err = Open(dir, Options{Logger: quiet, Cluster: node()})
	if err != nil {
		t.Fatalf("a node's data directory does not open as the node again: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}
