package apply

import (
	"maps"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// State is the immutable in-memory view of a database's metadata that
// readers load without locks (DB.State); every command that changes it
// publishes a new one. Nobody may change a State or what it refers to.
// Its maps are persistent (model.Map): a command that changes one branch
// builds the next state in time independent of the number of branches.
type State struct {
	Branches model.Map[string, *model.Branch]
	ByID     model.Map[uint32, *model.Branch]
	// ByTop finds a branch by its top layer, the one it writes: a fork's
	// lineage names its parent's top layer as its second.
	ByTop model.Map[uint32, *model.Branch]
	Git   map[string]string // git branch → service branch
	// forks holds, for every layer some live branch reads as a frozen
	// view, the seqs it is read at (Fork).
	forks model.Map[uint32, forkSet]
	// Refs counts the live branches whose lineage contains each layer.
	Refs model.Map[uint32, int]
}

// forkSet counts the lineage levels that read one layer frozen, by the
// seq they read it at, and keeps the newest.
type forkSet struct {
	newest uint64
	seqs   model.Map[uint64, int]
}

// newState builds a state from its branches.
func newState(branches []*model.Branch, git map[string]string) *State {
	st := &State{
		Branches: model.NewMap[string, *model.Branch](model.HashString),
		ByID:     model.NewMap[uint32, *model.Branch](model.HashU32),
		ByTop:    model.NewMap[uint32, *model.Branch](model.HashU32),
		Git:      git,
		forks:    model.NewMap[uint32, forkSet](model.HashU32),
		Refs:     model.NewMap[uint32, int](model.HashU32),
	}
	for _, b := range branches {
		st = st.with(nil, b)
	}
	return st
}

// Fork returns the newest seq at which a live branch reads layer as a
// frozen view, and whether one does: versions written at or before it
// must be kept when replaced.
func (st *State) Fork(layer uint32) (uint64, bool) {
	f, ok := st.forks.Get(layer)
	return f.newest, ok
}

// with returns the state with branch b in place of prev (nil: b is new).
func (st *State) with(prev, b *model.Branch) *State {
	n := *st
	if prev != nil {
		n.remove(prev)
	}
	n.Branches = n.Branches.With(b.Name, b)
	n.ByID = n.ByID.With(b.ID, b)
	n.ByTop = n.ByTop.With(b.Lineage[0].Layer, b)
	for i, lr := range b.Lineage {
		n.Refs = n.Refs.With(lr.Layer, n.Refs.At(lr.Layer)+1)
		if i > 0 {
			f, _ := n.forks.Get(lr.Layer)
			if f.seqs.Len() == 0 {
				f.seqs = model.NewMap[uint64, int](model.HashU64)
			}
			f.seqs = f.seqs.With(lr.Seq, f.seqs.At(lr.Seq)+1)
			f.newest = max(f.newest, lr.Seq)
			n.forks = n.forks.With(lr.Layer, f)
		}
	}
	return &n
}

// without returns the state without branch b.
func (st *State) without(b *model.Branch) *State {
	n := *st
	n.remove(b)
	return &n
}

// remove takes branch b out of n, a copy being built.
func (n *State) remove(b *model.Branch) {
	n.Branches = n.Branches.Without(b.Name)
	n.ByID = n.ByID.Without(b.ID)
	n.ByTop = n.ByTop.Without(b.Lineage[0].Layer)
	for i, lr := range b.Lineage {
		if c := n.Refs.At(lr.Layer) - 1; c > 0 {
			n.Refs = n.Refs.With(lr.Layer, c)
		} else {
			n.Refs = n.Refs.Without(lr.Layer)
		}
		if i == 0 {
			continue
		}
		f := n.forks.At(lr.Layer)
		if c := f.seqs.At(lr.Seq) - 1; c > 0 {
			f.seqs = f.seqs.With(lr.Seq, c)
		} else {
			f.seqs = f.seqs.Without(lr.Seq)
		}
		if f.seqs.Len() == 0 {
			n.forks = n.forks.Without(lr.Layer)
			continue
		}
		if _, still := f.seqs.Get(lr.Seq); !still && lr.Seq == f.newest {
			// The newest went: find the next, among this layer's forks.
			f.newest = 0
			for s := range f.seqs.All {
				f.newest = max(f.newest, s)
			}
		}
		n.forks = n.forks.With(lr.Layer, f)
	}
}

// withGit returns the state with git mapping g to branch to ("" removes
// the mapping).
func (st *State) withGit(g, to string) *State {
	n := *st
	n.Git = maps.Clone(st.Git)
	if to == "" {
		delete(n.Git, g)
	} else {
		n.Git[g] = to
	}
	return &n
}
