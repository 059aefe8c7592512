package index

import (
	"sort"
	"strings"
	"testing"
)

func TestParseColumnNames(t *testing.T) {
	items, _, _ := filterTestTables("svc")
	f := func(cols []string, want string) {
		t.Helper()
		p, err := ParseColumns(items, ColumnNames(cols), nil)
		if err != nil {
			if got := "error: " + err.Error(); got != want {
				t.Fatalf("%v: %s, want %s", cols, got, want)
			}
			return
		}
		if got := describeProjection(p); got != want {
			t.Fatalf("%v:\n got %s\nwant %s", cols, got, want)
		}
	}
	f(nil, "all")
	f([]string{"*"}, "all")
	f([]string{"name", "id", "svc.version", "svc.*"}, "name")
	f([]string{"address"}, "address.city address.geo.lat address.geo.lon address.tenant address.zip")
	f([]string{"address.*"}, "address.city address.geo.lat address.geo.lon address.tenant address.zip")
	f([]string{"address.geo"}, "address.geo.lat address.geo.lon")
	f([]string{"owner"}, "owner{all}")
	f([]string{"owner.*"}, "owner{all}")
	f([]string{"owner.name", "owner.team.name"}, "owner{name team{name}}")
	f([]string{"*", "owner.name"}, "all owner{name}")
	f([]string{"nope"}, "error: column [nope]: column not found")
	f([]string{"svc.nope"}, "error: column [svc.nope]: column not found")
	f([]string{"owner.nope"}, "error: column [owner.nope]: column not found")
	f([]string{"owner.svc.nope"}, "error: column [owner.svc.nope]: column not found")
}

// describeProjection prints a projection compactly and deterministically.
func describeProjection(p *Projection) string {
	var parts []string
	if p.All {
		parts = append(parts, "all")
	}
	var leaves []string
	for l := range p.Leaves {
		leaves = append(leaves, l)
	}
	sort.Strings(leaves)
	parts = append(parts, leaves...)
	for _, l := range p.LinkPaths() {
		parts = append(parts, l+"{"+describeProjection(p.Links[l])+"}")
	}
	return strings.Join(parts, " ")
}
