// Package bench holds what the benchmark suite ships besides code: the
// fallback word list of the dataset generator (package gen beside it).
package bench

import _ "embed"

// Words is words.txt: a few thousand common lowercase English words, one a
// line, used when the machine has no system word list.
//
//go:embed words.txt
var Words string
