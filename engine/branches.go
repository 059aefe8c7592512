package engine

import (
	"sort"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

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

// BranchDetails returns a branch and its schema.
func (e *Engine) BranchDetails(ref Ref) (BranchDetails, error) {
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return BranchDetails{}, err
	}
	b, err := d.state.Load().branch(ref.Branch)
	if err != nil {
		return BranchDetails{}, err
	}
	return BranchDetails{
		DatabaseName: ref.Database, BranchName: b.Name, CreatedAt: b.CreatedAt, ID: b.PublicID,
		Version: b.Version, LastMigrationID: b.LastMigrationID, Metadata: b.Metadata,
		StartedFrom: b.StartedFrom, Schema: b.Schema.Public(),
	}, nil
}

// ListBranches returns a database's branches, oldest first.
func (e *Engine) ListBranches(ws, db string) ([]BranchInfo, error) {
	d, err := e.database(ws, db)
	if err != nil {
		return nil, err
	}
	st := d.state.Load()
	out := make([]BranchInfo, 0, len(st.branches))
	ids := make([]uint32, 0, len(st.byID))
	for id := range st.byID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		b := st.byID[id]
		out = append(out, BranchInfo{Name: b.Name, CreatedAt: b.CreatedAt})
	}
	return out, nil
}

// CreateBranch forks a branch in constant time: the new branch reads the
// source's data as of now through its lineage and writes into its own layer.
func (e *Engine) CreateBranch(ref Ref, req CreateBranchRequest) error {
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
	cmd := &createBranch{Name: ref.Branch, From: req.From, PublicID: e.ids.Next("bb_", now), Now: now, Metadata: req.Metadata}
	if _, err := e.apply(d, cmd); err != nil {
		return err
	}
	e.maybeFlatten(d, ref.Branch)
	return nil
}

// createBranch forks From into a new branch Name: its lineage is a new
// layer over From's, frozen at the commit before this one.
type createBranch struct {
	Name     string          `json:"name"`
	From     string          `json:"from"`
	PublicID string          `json:"publicID"`
	Now      time.Time       `json:"now"`
	Metadata *BranchMetadata `json:"metadata,omitempty"`
}

func (c *createBranch) apply(tx *dbTx) (any, error) {
	if tx.st.branches[c.Name] != nil {
		return nil, Errorf(CodeAlreadyExists, "branch [%s] already exists", c.Name)
	}
	src := tx.st.branches[c.From]
	if src == nil {
		return nil, model.Invalidf("source branch [%s] not found", c.From)
	}
	lin := make(model.Lineage, 0, len(src.Lineage)+1)
	lin = append(lin, model.LayerRef{Layer: tx.allocLayer(), Seq: model.MaxSeq})
	lin = append(lin, model.LayerRef{Layer: src.Lineage[0].Layer, Seq: tx.seq - 1})
	lin = append(lin, src.Lineage[1:]...)
	b := &model.Branch{
		ID: tx.allocBranch(), PublicID: c.PublicID, Name: c.Name, CreatedAt: c.Now,
		Version: src.Version, LastMigrationID: src.LastMigrationID,
		StartedFrom: &StartedFrom{BranchName: src.Name, DBBranchID: src.PublicID, MigrationID: src.LastMigrationID},
		Lineage:     lin, Schema: src.Schema,
	}
	if c.Metadata != nil {
		b.Metadata = *c.Metadata
	}
	return nil, tx.putBranch(b)
}

// DeleteBranch deletes a branch; the layers no other branch reads are
// dropped with it. The last branch of a database cannot be deleted.
func (e *Engine) DeleteBranch(ref Ref) error {
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return err
	}
	_, err = e.apply(d, &deleteBranch{Name: ref.Branch})
	return err
}

// deleteBranch deletes a branch with its migrations and git mappings; the
// layers no other branch reads are dropped once it is applied.
type deleteBranch struct {
	Name string `json:"name"`
}

func (c *deleteBranch) apply(tx *dbTx) (any, error) {
	b, err := tx.st.branch(c.Name)
	if err != nil {
		return nil, err
	}
	if len(tx.st.branches) == 1 {
		return nil, Errorf(CodeConflict, "branch [%s] is the last branch of the database and cannot be deleted", c.Name)
	}
	if err := tx.removeBranch(b); err != nil {
		return nil, err
	}
	migs := codec.MetaKey(tx.d.id, codec.MetaMigration, codec.AppendU32(nil, b.ID))
	if err := tx.batch.DeleteRange(migs, codec.PrefixEnd(migs), nil); err != nil {
		return nil, err
	}
	for _, g := range model.SortedKeys(tx.st.git) {
		if tx.st.git[g] == b.Name {
			if err := tx.setGit(g, ""); err != nil {
				return nil, err
			}
		}
	}
	refs := tx.state().refs
	for _, lr := range b.Lineage {
		if refs[lr.Layer] == 0 {
			tx.dropLayers = append(tx.dropLayers, lr.Layer)
		}
	}
	return nil, nil
}

// SetBranchMetadata replaces a branch's metadata.
func (e *Engine) SetBranchMetadata(ref Ref, md BranchMetadata) error {
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return err
	}
	_, err = e.apply(d, &setBranchMetadata{Branch: ref.Branch, Metadata: md})
	return err
}

// setBranchMetadata replaces a branch's metadata.
type setBranchMetadata struct {
	Branch   string         `json:"branch"`
	Metadata BranchMetadata `json:"metadata"`
}

func (c *setBranchMetadata) apply(tx *dbTx) (any, error) {
	b, err := tx.st.branch(c.Branch)
	if err != nil {
		return nil, err
	}
	nb := *b
	nb.Metadata = c.Metadata
	return nil, tx.putBranch(&nb)
}

// GitMappings lists a database's git branch mapping by git branch name.
func (e *Engine) GitMappings(ws, db string) ([]GitMapping, error) {
	d, err := e.database(ws, db)
	if err != nil {
		return nil, err
	}
	st := d.state.Load()
	out := make([]GitMapping, 0, len(st.git))
	for _, g := range model.SortedKeys(st.git) {
		out = append(out, GitMapping{GitBranch: g, ServiceBranch: st.git[g]})
	}
	return out, nil
}

// SetGitMapping maps a git branch to an existing branch, replacing an
// existing entry, and tells whether one was replaced; with branch "" it
// removes the entry of the git branch, or fails with CodeNotFound when
// there is none.
func (e *Engine) SetGitMapping(ws, db, gitBranch, branch string) (replaced bool, err error) {
	if gitBranch == "" {
		return false, model.Invalidf("gitBranch is required")
	}
	d, err := e.database(ws, db)
	if err != nil {
		return false, err
	}
	res, err := e.apply(d, &setGitMapping{Git: gitBranch, Branch: branch})
	if err != nil {
		return false, err
	}
	return res.(bool), nil
}

// setGitMapping maps git branch Git to branch Branch, or with Branch ""
// removes the mapping of Git. The result tells whether a mapping of Git
// was there before.
type setGitMapping struct {
	Git    string `json:"git"`
	Branch string `json:"branch,omitempty"`
}

func (c *setGitMapping) apply(tx *dbTx) (any, error) {
	_, had := tx.st.git[c.Git]
	switch {
	case c.Branch == "" && !had:
		return nil, model.NotFoundf("git branch [%s] not found in the mapping", c.Git)
	case c.Branch != "" && tx.st.branches[c.Branch] == nil:
		return nil, model.Invalidf("branch [%s] not found", c.Branch)
	}
	return had, tx.setGit(c.Git, c.Branch)
}

// ResolveBranch picks the branch for a git branch (spec §4.4 rule 3).
func (e *Engine) ResolveBranch(ws, db, gitBranch, fallback string) (Resolution, error) {
	d, err := e.database(ws, db)
	if err != nil {
		return Resolution{}, err
	}
	st := d.state.Load()
	if gitBranch != "" {
		if to, ok := st.git[gitBranch]; ok {
			return Resolution{Branch: to, Code: ReasonFoundInMapping, Message: "found in git branch mapping"}, nil
		}
		if st.branches[gitBranch] != nil {
			return Resolution{Branch: gitBranch, Code: ReasonBranchExists, Message: "branch with the same name exists"}, nil
		}
	}
	if fallback != "" && st.branches[fallback] != nil {
		return Resolution{Branch: fallback, Code: ReasonFallback, Message: "using fallback branch"}, nil
	}
	def := "main"
	if st.branches[def] == nil {
		var oldest *model.Branch
		for _, b := range st.branches {
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
	d.gcMu.RLock()
	defer d.gcMu.RUnlock()
	b, err := d.state.Load().branch(ref.Branch)
	if err != nil {
		return 0, err
	}
	caches := make([]*bitmapCache, len(b.Schema.Tables))
	epochs := make([]uint64, len(b.Schema.Tables))
	for i, t := range b.Schema.Tables {
		if c, ok := d.caches.Load(storeKey{b.ID, t.ID}); ok {
			caches[i] = c.(*bitmapCache)
			epochs[i] = caches[i].epoch.Load()
		}
	}
	snap := e.pdb.NewSnapshot()
	defer snap.Close()
	live := string(codec.LiveBitmapID())
	var n int64
	for i, t := range b.Schema.Tables {
		// Same epoch, even, before and after the snapshot: the cache and
		// the snapshot show the same state (see bitmapCache).
		if c := caches[i]; c != nil && epochs[i]%2 == 0 && c.epoch.Load() == epochs[i] {
			if k, ok := c.cardinality(live, epochs[i]); ok {
				n += int64(k)
				continue
			}
		}
		bm, err := layers.ReadBitmap(snap, d.id, b.Lineage, t.ID, codec.LiveBitmapID(), nil)
		if err != nil {
			return 0, err
		}
		n += int64(bm.GetCardinality())
	}
	return n, nil
}

// cardinality returns the cardinality of the cached bitmap of id at epoch
// e, without copying it.
func (c *bitmapCache) cardinality(id string, e uint64) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at != e {
		return 0, false
	}
	if b := c.m[id]; b != nil {
		return b.GetCardinality(), true
	}
	return 0, false
}
