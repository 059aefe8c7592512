package apply

import (
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// InitDatabase is a new database's first command: it creates the first
// branch, with an empty schema.
type InitDatabase struct {
	Branch   string               `json:"branch"`
	PublicID string               `json:"publicID"`
	Now      time.Time            `json:"now"`
	Metadata model.BranchMetadata `json:"metadata"`
}

func (c *InitDatabase) apply(tx *Tx) (any, error) {
	if len(tx.st.Branches) > 0 || tx.d.nextBranch > 0 {
		// Once only: a replicated log may carry a second one.
		return nil, model.Errorf(model.CodeAlreadyExists, "database is already initialized")
	}
	b := &model.Branch{
		ID: tx.allocBranch(), PublicID: c.PublicID, Name: c.Branch, CreatedAt: c.Now,
		Metadata: c.Metadata, Lineage: model.Lineage{{Layer: tx.allocLayer(), Seq: model.MaxSeq}}, Schema: &model.Schema{},
	}
	b.Schema.Index()
	return nil, tx.putBranch(b)
}

// CreateBranch forks From into a new branch Name: its lineage is a new
// layer over From's, frozen at the commit before this one.
type CreateBranch struct {
	Name     string                `json:"name"`
	From     string                `json:"from"`
	PublicID string                `json:"publicID"`
	Now      time.Time             `json:"now"`
	Metadata *model.BranchMetadata `json:"metadata,omitempty"`
}

func (c *CreateBranch) apply(tx *Tx) (any, error) {
	if tx.st.Branches[c.Name] != nil {
		return nil, model.Errorf(model.CodeAlreadyExists, "branch [%s] already exists", c.Name)
	}
	src := tx.st.Branches[c.From]
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
		StartedFrom: &model.StartedFrom{BranchName: src.Name, DBBranchID: src.PublicID, MigrationID: src.LastMigrationID},
		Lineage:     lin, Schema: src.Schema,
	}
	if c.Metadata != nil {
		b.Metadata = *c.Metadata
	}
	return nil, tx.putBranch(b)
}

// DeleteBranch deletes a branch with its migrations and git mappings; the
// layers no other branch reads are dropped once it is applied.
type DeleteBranch struct {
	Name string `json:"name"`
}

func (c *DeleteBranch) apply(tx *Tx) (any, error) {
	b, err := tx.st.Branch(c.Name)
	if err != nil {
		return nil, err
	}
	if len(tx.st.Branches) == 1 {
		return nil, model.Errorf(model.CodeConflict, "branch [%s] is the last branch of the database and cannot be deleted", c.Name)
	}
	if err := tx.removeBranch(b); err != nil {
		return nil, err
	}
	migs := codec.MetaKey(tx.d.ID, codec.MetaMigration, codec.AppendU32(nil, b.ID))
	if err := tx.batch.DeleteRange(migs, codec.PrefixEnd(migs), nil); err != nil {
		return nil, err
	}
	for _, g := range model.SortedKeys(tx.st.Git) {
		if tx.st.Git[g] == b.Name {
			if err := tx.setGit(g, ""); err != nil {
				return nil, err
			}
		}
	}
	refs := tx.state().Refs
	for _, lr := range b.Lineage {
		if refs[lr.Layer] == 0 {
			tx.dropLayers = append(tx.dropLayers, lr.Layer)
		}
	}
	return nil, nil
}

// SetBranchMetadata replaces a branch's metadata.
type SetBranchMetadata struct {
	Branch   string               `json:"branch"`
	Metadata model.BranchMetadata `json:"metadata"`
}

func (c *SetBranchMetadata) apply(tx *Tx) (any, error) {
	b, err := tx.st.Branch(c.Branch)
	if err != nil {
		return nil, err
	}
	nb := *b
	nb.Metadata = c.Metadata
	return nil, tx.putBranch(&nb)
}

// SetGitMapping maps git branch Git to branch Branch, or with Branch ""
// removes the mapping of Git. The result tells whether a mapping of Git
// was there before.
type SetGitMapping struct {
	Git    string `json:"git"`
	Branch string `json:"branch,omitempty"`
}

func (c *SetGitMapping) apply(tx *Tx) (any, error) {
	_, had := tx.st.Git[c.Git]
	switch {
	case c.Branch == "" && !had:
		return nil, model.NotFoundf("git branch [%s] not found in the mapping", c.Git)
	case c.Branch != "" && tx.st.Branches[c.Branch] == nil:
		return nil, model.Invalidf("branch [%s] not found", c.Branch)
	}
	return had, tx.setGit(c.Git, c.Branch)
}
