package fts

import (
	"sync"
	"unicode/utf8"
)

// levenshtein is the automaton of a typo-tolerant lookup: it accepts the
// terms within edit distance k of a query word, counting characters and a
// transposition of two adjacent characters as one edit (optimal string
// alignment, as EditDistance counts). The dictionary's search feeds it the
// bytes of the paths it walks, and it computes one row of the edit
// distance matrix per character read, so it costs nothing before the walk:
// building a deterministic automaton for a word takes longer than walking
// the dictionary with it (about 0.4 ms for one edit and 3 ms for two), and
// every query word would pay it.
//
// After i characters only the cells of query prefixes of length i−k … i+k
// can be within k, so a row keeps those 2k+1 cells, saturated at k+1. A
// state is an index into the automaton's own arrays. It implements
// vellum.Automaton; one walk uses it at a time.
type levenshtein struct {
	query []rune
	k     int
	// states and rows grow as the walk reads; each state owns 2k+1 cells
	// of rows, or shares its parent's while a character is incomplete.
	states []levState
	rows   []uint8
}

// levState is where the walk stands after reading some characters of a
// term: how many, its row of the matrix, the row one character back and
// the last character read (both for transpositions), and the bytes read of
// a character not complete yet.
type levState struct {
	depth     int32
	row, prev int32 // offsets in rows; prev is -1 before the first character
	last      rune
	pend      [utf8.UTFMax]byte
	npend     uint8
}

// levReserved are state numbers the automaton never hands out: vellum
// takes 1 for "no state".
const levReserved = 2

// levPool recycles automata: a walk over a large dictionary grows their
// arrays to thousands of states.
var levPool = sync.Pool{New: func() any { return new(levenshtein) }}

// newLevenshtein returns a pooled automaton for query and distance k; the
// caller puts it back with free.
func newLevenshtein(query string, k int) *levenshtein {
	a := levPool.Get().(*levenshtein)
	a.query = append(a.query[:0], []rune(query)...)
	a.k = k
	a.states = append(a.states[:0], make([]levState, levReserved)...)
	a.rows = a.rows[:0]
	for j := -k; j <= k; j++ {
		a.rows = append(a.rows, a.far())
		if j >= 0 && j <= len(a.query) {
			a.rows[len(a.rows)-1] = uint8(j)
		}
	}
	a.states = append(a.states, levState{prev: -1})
	return a
}

// free returns the automaton to the pool.
func (a *levenshtein) free() { levPool.Put(a) }

// far is the saturated value of a cell: further than k.
func (a *levenshtein) far() uint8 { return uint8(a.k + 1) }

// cell returns the distance between the first depth characters read and
// the query's first j characters, saturated at k+1, from the row at off.
func (a *levenshtein) cell(off int32, depth int32, j int) uint8 {
	d := int(depth)
	if j < 0 || j > len(a.query) || j < d-a.k || j > d+a.k {
		return a.far()
	}
	return a.rows[int(off)+j-d+a.k]
}

// Start returns the state before the first byte.
func (a *levenshtein) Start() int { return levReserved }

// IsMatch reports whether the bytes read so far are a term within k.
func (a *levenshtein) IsMatch(s int) bool {
	st := &a.states[s]
	return st.npend == 0 && a.cell(st.row, st.depth, len(a.query)) <= uint8(a.k)
}

// CanMatch reports whether some continuation may still come within k: a
// cell of the row does. (With transpositions as well: a cell of the next
// row is at least the least cell of this one.) A state that cannot match
// is dropped when it is the latest: the walk never uses it again.
func (a *levenshtein) CanMatch(s int) bool {
	st := &a.states[s]
	w := 2*a.k + 1
	for _, c := range a.rows[st.row : int(st.row)+w] {
		if c <= uint8(a.k) {
			return true
		}
	}
	if s == len(a.states)-1 && s > levReserved && int(st.row)+w == len(a.rows) {
		a.rows = a.rows[:st.row]
		a.states = a.states[:s]
	}
	return false
}

// WillAlwaysMatch is false: a longer term is always further away.
func (a *levenshtein) WillAlwaysMatch(int) bool { return false }

// Accept returns the state after reading byte b in state s.
func (a *levenshtein) Accept(s int, b byte) int {
	st := a.states[s]
	if st.npend == 0 && b < utf8.RuneSelf {
		return a.step(st, rune(b))
	}
	st.pend[st.npend] = b
	st.npend++
	if !utf8.FullRune(st.pend[:st.npend]) {
		a.states = append(a.states, st)
		return len(a.states) - 1
	}
	r, _ := utf8.DecodeRune(st.pend[:st.npend])
	st.npend = 0
	return a.step(st, r)
}

// step adds the state after reading character c in state st.
func (a *levenshtein) step(st levState, c rune) int {
	w := 2*a.k + 1
	off := int32(len(a.rows))
	for range w {
		a.rows = append(a.rows, 0)
	}
	cur := a.rows[off : int(off)+w]
	d := st.depth + 1 // the depth of the new row
	for t := range cur {
		j := int(d) - a.k + t
		v := a.far()
		switch {
		case j < 0 || j > len(a.query):
		case j == 0:
			v = uint8(min(int(d), a.k+1))
		default:
			v = a.cell(st.row, st.depth, j-1)
			if a.query[j-1] != c {
				v++
			}
			v = min(v, a.cell(st.row, st.depth, j)+1)
			if t > 0 {
				v = min(v, cur[t-1]+1)
			}
			if st.prev >= 0 && j > 1 && a.query[j-2] == c && a.query[j-1] == st.last {
				v = min(v, a.cell(st.prev, st.depth-1, j-2)+1)
			}
		}
		cur[t] = min(v, a.far())
	}
	a.states = append(a.states, levState{depth: d, row: off, prev: st.row, last: c})
	return len(a.states) - 1
}

// distance returns the edit distance of term from the query, or k+1 when
// it is further: the automaton run over term alone.
func (a *levenshtein) distance(term string) int {
	a.states = a.states[:levReserved+1]
	a.rows = a.rows[:2*a.k+1]
	s := a.Start()
	for i := 0; i < len(term); i++ {
		if s = a.Accept(s, term[i]); !a.CanMatch(s) {
			return a.k + 1
		}
	}
	st := &a.states[s]
	if st.npend != 0 {
		return a.k + 1
	}
	return int(a.cell(st.row, st.depth, len(a.query)))
}
