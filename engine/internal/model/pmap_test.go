package model

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// TestMapModel runs random With and Without calls against a Go map, and
// checks every version kept along the way still holds what it held: a
// change never shows through an older map. Weak hashes force deep paths
// and the lists of equal hashes.
func TestMapModel(t *testing.T) {
	hashes := map[string]func(uint32) uint64{
		"spread":    HashU32,
		"low bits":  func(k uint32) uint64 { return uint64(k % 7) },
		"all equal": func(uint32) uint64 { return 42 },
		"high bits": func(k uint32) uint64 { return uint64(k%13) << 58 },
	}
	for name, hash := range hashes {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			m := NewMap[uint32, int](hash)
			want := map[uint32]int{}
			type version struct {
				m    Map[uint32, int]
				want map[uint32]int
			}
			var kept []version
			for step := range 3000 {
				k := uint32(r.IntN(200))
				if r.IntN(3) == 0 {
					m = m.Without(k)
					delete(want, k)
				} else {
					m = m.With(k, step)
					want[k] = step
				}
				if step%97 == 0 {
					kept = append(kept, version{m, maps.Clone(want)})
				}
			}
			kept = append(kept, version{m, want})
			for i, v := range kept {
				if v.m.Len() != len(v.want) {
					t.Fatalf("version %d: Len %d, want %d", i, v.m.Len(), len(v.want))
				}
				seen := map[uint32]int{}
				for k, x := range v.m.All {
					if _, dup := seen[k]; dup {
						t.Fatalf("version %d: key %d twice", i, k)
					}
					seen[k] = x
				}
				if !maps.Equal(seen, v.want) {
					t.Fatalf("version %d: iterates %v, want %v", i, seen, v.want)
				}
				for k := range uint32(200) {
					got, ok := v.m.Get(k)
					w, wok := v.want[k]
					if ok != wok || got != w {
						t.Fatalf("version %d: Get(%d) = %d, %v; want %d, %v", i, k, got, ok, w, wok)
					}
				}
			}
		})
	}
}
