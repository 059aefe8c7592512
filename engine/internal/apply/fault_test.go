package apply

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// TestStorageFault: a panic of the storage engine's write path becomes the
// applier's fault, as an error of it does; from then on every command, of
// a database or of the catalog, fails at once with CodeUnavailable naming
// the first cause, and no lock stays held.
func TestStorageFault(t *testing.T) {
	r := newReplica(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err := r.a.storage(func() error { return nil }); err != nil || r.a.Fault() != nil {
		t.Fatalf("a healthy call: %v, fault %v", err, r.a.Fault())
	}
	err := r.a.storage(func() error { panic("log writer: no space left on device") })
	if model.CodeOf(err) != model.CodeUnavailable || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("a panic: %v", err)
	}
	if again := r.a.storage(func() error { return errors.New("second") }); again.Error() != err.Error() {
		t.Fatalf("the first cause is not kept: %v", again)
	}
	add := &SchemaOp{SchemaHeader: SchemaHeader{Branch: "main", ID: "mig_x", Now: time.Now()},
		Op: model.MigrationOp{AddTable: &model.TableOp{Table: "t"}}}
	if _, err := r.a.Apply(OnDatabase(r.d.ID, add)); model.CodeOf(err) != model.CodeUnavailable {
		t.Fatalf("a database command after the fault: %v", err)
	}
	if _, err := r.a.Apply(OnCatalog(&catalog.SetServerState{Name: "x", Value: []byte("y")})); model.CodeOf(err) != model.CodeUnavailable {
		t.Fatalf("a catalog command after the fault: %v", err)
	}
	// No lock stays held: the writer lock and the catalog's are free.
	if !r.d.mu.TryLock() {
		t.Fatal("the writer lock is held")
	}
	r.d.mu.Unlock()
	if !r.a.catMu.TryLock() {
		t.Fatal("the catalog lock is held")
	}
	r.a.catMu.Unlock()
}
