package memstore

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/coppice-db/coppice/codec"
)

// TestArenaAgainstModel writes, overwrites and clears the rows of a string
// and a multiple column at random, cloning them now and then, and checks
// every column against a plain model after each round: values, the packed
// array readers scan, the garbage count, that re-packing happens and keeps
// the arena bounded, that a clone and its source change apart, and that
// strings handed out earlier keep their value.
func TestArenaAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	word := func() string {
		switch rng.Intn(8) {
		case 0:
			return ""
		case 1:
			return strings.Repeat("long·", 30+rng.Intn(10)) // a length of two uvarint bytes
		}
		return fmt.Sprintf("w%d", rng.Intn(500))
	}
	type model struct {
		strs  map[uint32]string
		lists map[uint32][]string
	}
	type pair struct {
		str, list *Column
		m         model
	}
	newPair := func() *pair {
		return &pair{str: &Column{kind: codec.KindString}, list: &Column{kind: codec.KindStrings},
			m: model{strs: map[uint32]string{}, lists: map[uint32][]string{}}}
	}
	// handed holds strings read earlier, with the value they had.
	type handed struct{ got, want string }
	var held []handed
	check := func(round int, name string, p *pair) {
		t.Helper()
		packed := p.str.Strings()
		for row := range uint32(1200) {
			v := p.str.Get(row)
			want, ok := p.m.strs[row]
			if v.IsNull() == ok || v.Str != want {
				t.Fatalf("round %d, %s: row %d holds %v, want %q (%v)", round, name, row, v, want, ok)
			}
			if ok && (int(row) >= packed.Len() || int(row) >= len(p.list.strs.offs)) {
				t.Fatalf("round %d, %s: row %d holds a value past the offsets", round, name, row)
			}
			if ok && packed.At(row) != want {
				t.Fatalf("round %d, %s: packed row %d is %q, want %q", round, name, row, packed.At(row), want)
			}
			l := p.list.Get(row)
			wl, ok := p.m.lists[row]
			if l.IsNull() == ok || !slices.Equal(l.Strs, wl) || ok && l.Strs == nil {
				t.Fatalf("round %d, %s: list row %d holds %v, want %q", round, name, row, l, wl)
			}
			if ok && rng.Intn(50) == 0 {
				held = append(held, handed{v.Str, want})
			}
		}
		for _, c := range []*Column{p.str, p.list} {
			live := int64(1)
			for _, off := range c.strs.offs {
				if off != 0 {
					live += int64(c.strs.entryLen(off, c.kind == codec.KindStrings))
				}
			}
			if len(c.strs.data) > 0 && live+c.strs.garbage != int64(len(c.strs.data)) {
				t.Fatalf("round %d, %s: %d live bytes and %d garbage in an arena of %d", round, name, live, c.strs.garbage, len(c.strs.data))
			}
			if c.strs.garbage >= minRepack && c.strs.garbage >= int64(len(c.strs.data))/2 {
				t.Fatalf("round %d, %s: garbage %d of %d not re-packed", round, name, c.strs.garbage, len(c.strs.data))
			}
		}
		for _, h := range held {
			if h.got != h.want {
				t.Fatalf("round %d: a string handed out earlier became %q, was %q", round, h.got, h.want)
			}
		}
	}
	// Empty values have no entry, but their rows have an offset: readers
	// of the packed values take rows past the offsets for rows without one.
	empty := newPair()
	empty.str.set(5, codec.String(""))
	empty.m.strs[5] = ""
	empty.list.set(5, codec.Strings([]string{}))
	empty.m.lists[5] = []string{}
	check(-1, "empty values", empty)
	pairs := []*pair{newPair()}
	repacked := 0
	for round := range 60 {
		// Rounds of few writes leave the arenas as they were cloned, rounds
		// of many re-pack them.
		ops := 1 + rng.Intn(50)
		if rng.Intn(2) == 0 {
			ops = 2000
		}
		for _, p := range pairs {
			for range ops {
				row := uint32(rng.Intn(1200))
				before := len(p.str.strs.data) + len(p.list.strs.data)
				switch rng.Intn(6) {
				case 0:
					p.str.set(row, codec.Null())
					delete(p.m.strs, row)
					p.list.set(row, codec.Null())
					delete(p.m.lists, row)
				default:
					s := word()
					p.str.set(row, codec.String(s))
					p.m.strs[row] = s
					l := []string{}
					for range rng.Intn(5) {
						l = append(l, word())
					}
					p.list.set(row, codec.Strings(l))
					p.m.lists[row] = slices.Clone(l)
				}
				if len(p.str.strs.data)+len(p.list.strs.data) < before {
					repacked++
				}
			}
		}
		for i, p := range pairs {
			check(round, fmt.Sprint("store ", i), p)
		}
		if rng.Intn(4) == 0 && len(pairs) < 4 {
			src := pairs[rng.Intn(len(pairs))]
			s := &TableStore{cols: map[uint32]*Column{1: src.str, 2: src.list}}
			cs := s.clone()
			cp := &pair{str: cs.cols[1], list: cs.cols[2], m: model{strs: maps.Clone(src.m.strs), lists: maps.Clone(src.m.lists)}}
			pairs = append(pairs, cp)
		}
	}
	if repacked == 0 {
		t.Fatal("no arena was re-packed")
	}
	if len(pairs) < 2 {
		t.Fatal("no clone was made")
	}
}
