package consensus

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps the Raft library behind this package: the package
// imports no other package of the module, and no other package imports
// the library, so that replacing it touches this package alone.
func TestImports(t *testing.T) {
	const mod = "github.com/coppice-db/coppice/"
	const self = mod + "engine/internal/consensus"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", mod+"...").Output()
	if errors.Is(err, exec.ErrNotFound) {
		t.Skipf("go list unavailable: %v", err)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("go list: %v\n%s", err, ee.Stderr)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if fields[0] == self && strings.HasPrefix(imp, mod) {
				t.Errorf("%s imports %s: it must stand alone", self, imp)
			}
			if fields[0] != self && strings.HasPrefix(imp, "github.com/lni/dragonboat") {
				t.Errorf("%s imports %s: only %s may", fields[0], imp, self)
			}
		}
	}
}
