package engine

import (
	"sort"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Branches are the branches of an engine's databases: created in constant
// time by forking another (copy-on-write), deleted with the layers only
// they read, described, and mapped from git branches.
type Branches struct {
	e *Engine
}

// Branches returns the engine's branches.
func (e *Engine) Branches() *Branches { return &e.branches }

// BranchDetails is a branch with its schema (spec §2.6).
type BranchDetails struct {
	DatabaseName    string
	BranchName      string
	CreatedAt       time.Time
	ID              string
	Version         uint64
	LastMigrationID string
	Metadata        BranchMetadata
	StartedFrom     *StartedFrom
	Schema          SchemaDef
}

// BranchInfo is one entry of a database's branch list.
type BranchInfo struct {
	Name      string
	CreatedAt time.Time
}

// CreateBranchRequest forks From (default main) into a new branch.
type CreateBranchRequest struct {
	From     string
	Metadata *BranchMetadata
}

// GitMapping is one git branch → service branch entry.
type GitMapping struct {
	GitBranch     string
	ServiceBranch string
}

// Resolution reason codes of ResolveBranch (compat-api.md §6).
const (
	ReasonFoundInMapping = "FOUND_IN_MAPPING"
	ReasonBranchExists   = "BRANCH_EXISTS"
	ReasonFallback       = "FALLBACK_BRANCH"
	ReasonDefault        = "DEFAULT_BRANCH"
)

// Resolution is the answer of ResolveBranch.
type Resolution struct {
	Branch  string
	Code    string
	Message string
}

// Details returns a branch and its schema.
func (br *Branches) Details(ref Ref) (BranchDetails, error) {
	e := br.e
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return BranchDetails{}, err
	}
	b, err := d.State().Branch(ref.Branch)
	if err != nil {
		return BranchDetails{}, err
	}
	return BranchDetails{
		DatabaseName: ref.Database, BranchName: b.Name, CreatedAt: b.CreatedAt, ID: b.PublicID,
		Version: b.Version, LastMigrationID: b.LastMigrationID, Metadata: b.Metadata,
		StartedFrom: b.StartedFrom, Schema: b.Schema.Public(),
	}, nil
}

// List returns a database's branches, oldest first.
func (br *Branches) List(ws, db string) ([]BranchInfo, error) {
	e := br.e
	d, err := e.database(ws, db)
	if err != nil {
		return nil, err
	}
	st := d.State()
	out := make([]BranchInfo, 0, st.Branches.Len())
	ids := make([]uint32, 0, st.ByID.Len())
	for id := range st.ByID.All {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		b := st.ByID.At(id)
		out = append(out, BranchInfo{Name: b.Name, CreatedAt: b.CreatedAt})
	}
	return out, nil
}

// Create forks a branch in constant time: the new branch reads the
// source's data as of now through its lineage and writes into its own layer.
func (br *Branches) Create(ref Ref, req CreateBranchRequest) error {
	e := br.e
	if err := model.CheckName("branch", ref.Branch); err != nil {
		return err
	}
	if req.From == "" {
		req.From = "main"
	}
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return err
	}
	now := e.now()
	cmd := &apply.CreateBranch{Name: ref.Branch, From: req.From, PublicID: e.ids.Next("bb_", now), Now: now, Metadata: req.Metadata}
	if _, err := e.apply(d, cmd); err != nil {
		return err
	}
	e.maybeFlatten(d, ref.Branch)
	return nil
}

// Delete deletes a branch; the layers no other branch reads are
// dropped with it. The last branch of a database cannot be deleted.
func (br *Branches) Delete(ref Ref) error {
	e := br.e
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return err
	}
	_, err = e.apply(d, &apply.DeleteBranch{Name: ref.Branch})
	return err
}

// SetMetadata replaces a branch's metadata.
func (br *Branches) SetMetadata(ref Ref, md BranchMetadata) error {
	e := br.e
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return err
	}
	_, err = e.apply(d, &apply.SetBranchMetadata{Branch: ref.Branch, Metadata: md})
	return err
}

// GitMappings lists a database's git branch mapping by git branch name.
func (br *Branches) GitMappings(ws, db string) ([]GitMapping, error) {
	e := br.e
	d, err := e.database(ws, db)
	if err != nil {
		return nil, err
	}
	st := d.State()
	out := make([]GitMapping, 0, len(st.Git))
	for _, g := range model.SortedKeys(st.Git) {
		out = append(out, GitMapping{GitBranch: g, ServiceBranch: st.Git[g]})
	}
	return out, nil
}

// SetGitMapping maps a git branch to an existing branch, replacing an
// existing entry, and tells whether one was replaced; with branch "" it
// removes the entry of the git branch, or fails with CodeNotFound when
// there is none.
func (br *Branches) SetGitMapping(ws, db, gitBranch, branch string) (replaced bool, err error) {
	e := br.e
	if gitBranch == "" {
		return false, model.Invalidf("gitBranch is required")
	}
	d, err := e.database(ws, db)
	if err != nil {
		return false, err
	}
	res, err := e.apply(d, &apply.SetGitMapping{Git: gitBranch, Branch: branch})
	if err != nil {
		return false, err
	}
	return res.(bool), nil
}

// Resolve picks the branch for a git branch (spec §4.4 rule 3).
func (br *Branches) Resolve(ws, db, gitBranch, fallback string) (Resolution, error) {
	e := br.e
	d, err := e.database(ws, db)
	if err != nil {
		return Resolution{}, err
	}
	st := d.State()
	if gitBranch != "" {
		if to, ok := st.Git[gitBranch]; ok {
			return Resolution{Branch: to, Code: ReasonFoundInMapping, Message: "found in git branch mapping"}, nil
		}
		if st.Branches.At(gitBranch) != nil {
			return Resolution{Branch: gitBranch, Code: ReasonBranchExists, Message: "branch with the same name exists"}, nil
		}
	}
	if fallback != "" && st.Branches.At(fallback) != nil {
		return Resolution{Branch: fallback, Code: ReasonFallback, Message: "using fallback branch"}, nil
	}
	def := "main"
	if st.Branches.At(def) == nil {
		var oldest *model.Branch
		for _, b := range st.Branches.All {
			if oldest == nil || b.ID < oldest.ID {
				oldest = b
			}
		}
		if oldest != nil {
			def = oldest.Name
		}
	}
	return Resolution{Branch: def, Code: ReasonDefault, Message: "using default branch"}, nil
}

// RecordCount returns the number of records of a branch: the sum over its
// tables of the cardinality of the live-row bitmap. A table whose bitmap
// cache holds the live bitmap of the current state answers from memory;
// the others compose it from storage, all from one snapshot.
func (e *Engine) RecordCount(ref Ref) (int64, error) {
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return 0, err
	}
	// The layers of the lineage read stay until the last read.
	d.Pin()
	defer d.Unpin()
	b, err := d.State().Branch(ref.Branch)
	if err != nil {
		return 0, err
	}
	caches := make([]*memstore.BitmapCache, len(b.Schema.Tables))
	epochs := make([]uint64, len(b.Schema.Tables))
	marks := make([][]uint64, len(b.Schema.Tables))
	for i, t := range b.Schema.Tables {
		if c := d.Cache(storeKey{Branch: b.ID, Table: t.ID}); c != nil {
			caches[i], epochs[i] = c, c.Epoch()
		}
		marks[i] = d.CountMarks(b, t.ID)
	}
	var snap *pebble.Snapshot
	defer func() {
		if snap != nil {
			snap.Close()
		}
	}()
	live := string(codec.LiveBitmapID())
	var n int64
	for i, t := range b.Schema.Tables {
		// A count remembered under the marks taken above: the table's
		// rows have not changed since (a child that has not written it).
		if k, ok := d.LiveCount(b, t.ID, marks[i]); ok {
			n += k
			continue
		}
		if snap == nil {
			snap = e.pdb.NewSnapshot()
		}
		// Same epoch, even, before and after the snapshot: the cache and
		// the snapshot show the same state (see bitmapCache).
		if c := caches[i]; c != nil && epochs[i]%2 == 0 && c.Epoch() == epochs[i] {
			if k, ok := c.Cardinality(live, epochs[i]); ok {
				n += int64(k)
				continue
			}
		}
		bm, err := layers.ReadBitmap(snap, d.ID, b.Lineage, t.ID, codec.LiveBitmapID(), nil)
		if err != nil {
			return 0, err
		}
		k := int64(bm.GetCardinality())
		d.SetLiveCount(b, t.ID, marks[i], k)
		n += k
	}
	return n, nil
}

// maybeFlatten starts a background flatten (apply.Flatten) of the named
// branch if its lineage is deeper than Options.FlattenDepth.
func (e *Engine) maybeFlatten(d *database, name string) {
	b := d.State().Branches.At(name)
	if b == nil || len(b.Lineage) <= e.opts.FlattenDepth {
		return
	}
	// A failed flatten leaves the branch as it was; the next fork retries.
	e.background(func() {
		e.obs.timed(EventFlatten, func() error {
			if e.cl != nil {
				return e.cl.flatten(d, b.ID)
			}
			return e.ap.Flatten(d.DB, b.ID)
		})
	})
}
