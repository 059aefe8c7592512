package index

import (
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestPlan runs testdata/plan: "plan" with a filter as input and the plan
// chosen for it as output. Regenerate with
// go test ./index -run TestPlan -rewrite.
func TestPlan(t *testing.T) {
	items, _, _ := filterTestTables()
	datadriven.RunTest(t, "testdata/plan", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "plan":
			n, err := ParseFilter(items, []byte(d.Input), "svc")
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return Compile(n).String()
		}
		t.Fatalf("unknown command %s", d.Cmd)
		return ""
	})
}
