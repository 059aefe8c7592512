package api

import (
	"net/http"
	"regexp"

	"github.com/coppice-db/coppice/engine"
)

// namePattern is the naming rule of branch, database, table and column names
// (spec §2.1); the engine enforces it on creation, the API on metadata.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_\-~]{1,255}$`)

// branchMetadataRequest is BranchMetadata as a request carries it; pointers
// tell an empty string (invalid) from an absent key.
type branchMetadataRequest struct {
	Repository *string  `json:"repository"`
	Branch     *string  `json:"branch"`
	Stage      *string  `json:"stage"`
	Labels     []string `json:"labels"`
}

// metadata validates the request (spec §2.7) and returns the metadata.
func (m *branchMetadataRequest) metadata() (engine.BranchMetadata, error) {
	var md engine.BranchMetadata
	if m.Repository != nil {
		if *m.Repository == "" {
			return md, invalid("metadata.repository must not be empty")
		}
		md.Repository = *m.Repository
	}
	if m.Branch != nil {
		if !namePattern.MatchString(*m.Branch) {
			return md, invalid("metadata.branch [%s] is not a valid branch name", *m.Branch)
		}
		md.Branch = *m.Branch
	}
	if m.Stage != nil {
		if *m.Stage == "" {
			return md, invalid("metadata.stage must not be empty")
		}
		md.Stage = *m.Stage
	}
	md.Labels = m.Labels
	return md, nil
}

// listBranches: GET /dbs/{db}.
func (s *Server) listBranches(r *request) error {
	ws, db, err := r.dataDB()
	if err != nil {
		return err
	}
	list, err := s.eng.Branches().List(ws, db)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(list))
	for _, b := range list {
		out = append(out, map[string]any{"name": b.Name, "createdAt": formatTime(b.CreatedAt)})
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"databaseName": db, "branches": out})
	return nil
}

// getBranch: GET /db/{dbb}, branch details with the schema (spec §2.6).
func (s *Server) getBranch(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	d, err := s.eng.Branches().Details(ref.Ref)
	if err != nil {
		return err
	}
	out := map[string]any{
		"databaseName":    d.DatabaseName,
		"branchName":      d.BranchName,
		"createdAt":       formatTime(d.CreatedAt),
		"id":              d.ID,
		"version":         d.Version,
		"lastMigrationID": d.LastMigrationID,
		"metadata":        d.Metadata,
		"schema":          d.Schema,
	}
	if d.StartedFrom != nil {
		out["startedFrom"] = d.StartedFrom
	}
	writeJSON(r.ctx, http.StatusOK, out)
	return nil
}

// createBranch: PUT /db/{dbb}; the query parameter `from` wins over the
// body's.
func (s *Server) createBranch(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	var body struct {
		From     *string                `json:"from"`
		Metadata *branchMetadataRequest `json:"metadata"`
	}
	if err := r.decode(&body, true); err != nil {
		return err
	}
	var req engine.CreateBranchRequest
	if body.From != nil {
		req.From = *body.From
	}
	if from, ok := r.query("from"); ok && from != "" {
		req.From = from
	}
	if body.Metadata != nil {
		md, err := body.Metadata.metadata()
		if err != nil {
			return err
		}
		req.Metadata = &md
	}
	if err := s.eng.Branches().Create(ref.Ref, req); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusCreated, map[string]any{"databaseName": ref.Database, "branchName": ref.Branch, "status": "completed"})
	return nil
}

// deleteBranch: DELETE /db/{dbb}.
func (s *Server) deleteBranch(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	if err := s.eng.Branches().Delete(ref.Ref); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"status": "completed"})
	return nil
}

// getBranchMetadata: GET /db/{dbb}/metadata.
func (s *Server) getBranchMetadata(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	det, err := s.eng.Branches().Details(ref.Ref)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, det.Metadata)
	return nil
}

// setBranchMetadata: PUT /db/{dbb}/metadata replaces the metadata.
func (s *Server) setBranchMetadata(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	var body branchMetadataRequest
	if err := r.decode(&body, false); err != nil {
		return err
	}
	md, err := body.metadata()
	if err != nil {
		return err
	}
	if err := s.eng.Branches().SetMetadata(ref.Ref, md); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusNoContent, nil)
	return nil
}
