package index

import (
	"bytes"
	"strings"
)

// IsNullJSON reports whether raw JSON is absent (empty or blank) or null:
// the optional fields of every request treat both the same.
func IsNullJSON(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// SetPath sets the value at a dotted path in nested maps, creating the
// maps of the path's objects: SetPath(m, "address.city", v) sets
// m["address"]["city"]. Records, highlights and summaries nest their
// object and link paths this way.
func SetPath(m map[string]any, path string, v any) {
	for {
		head, rest, found := strings.Cut(path, ".")
		if !found {
			m[path] = v
			return
		}
		sub, _ := m[head].(map[string]any)
		if sub == nil {
			sub = map[string]any{}
			m[head] = sub
		}
		m, path = sub, rest
	}
}
