package model

import (
	"math"
	"time"
)

// BranchMetadata is the free-form metadata of a branch (spec §2.7).
type BranchMetadata struct {
	Repository string   `json:"repository,omitempty"`
	Branch     string   `json:"branch,omitempty"`
	Stage      string   `json:"stage,omitempty"`
	Labels     []string `json:"labels,omitempty"`
}

// StartedFrom tells which branch, and at which migration, a branch was
// created from.
type StartedFrom struct {
	BranchName  string `json:"branchName"`
	DBBranchID  string `json:"dbBranchID"`
	MigrationID string `json:"migrationID"`
}

// Branch is a stored branch: its identity, lineage of layers and schema.
type Branch struct {
	ID              uint32         `json:"id"`
	PublicID        string         `json:"publicID"`
	Name            string         `json:"name"`
	CreatedAt       time.Time      `json:"createdAt"`
	Version         uint64         `json:"version"`
	LastMigrationID string         `json:"lastMigrationID"`
	Metadata        BranchMetadata `json:"metadata"`
	StartedFrom     *StartedFrom   `json:"startedFrom,omitempty"`
	Lineage         Lineage        `json:"lineage"`
	Schema          *Schema        `json:"schema"`
}

// MaxSeq reads the newest state of a layer: the top layer of a branch.
const MaxSeq = math.MaxUint64

// LayerRef is one element of a branch's lineage: a layer, read as of Seq.
type LayerRef struct {
	Layer uint32 `json:"layer"`
	Seq   uint64 `json:"seq"`
}

// Lineage is a branch's stack of layers, top first.
type Lineage []LayerRef

// TableKey names one table of one branch, by ids: what the structures
// derived per table of a branch are kept under.
type TableKey struct {
	Branch, Table uint32
}
