package api

import (
	"net/http"
)

// listGitBranches: GET /dbs/{db}/gitBranches. The list key is `mapping`
// (compat-api.md §1.3).
func (s *Server) listGitBranches(r *request) error {
	ws, db, err := r.dataDB()
	if err != nil {
		return err
	}
	list, err := s.eng.Branches().GitMappings(ws, db)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(list))
	for _, m := range list {
		out = append(out, map[string]any{"gitBranch": m.GitBranch, "xataBranch": m.ServiceBranch})
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"mapping": out})
	return nil
}

// addGitBranch: POST /dbs/{db}/gitBranches; 204 for a new entry, 201 with
// a warning when an entry was replaced.
func (s *Server) addGitBranch(r *request) error {
	ws, db, err := r.dataDB()
	if err != nil {
		return err
	}
	var body struct {
		GitBranch  string `json:"gitBranch"`
		XataBranch string `json:"xataBranch"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if body.GitBranch == "" {
		return invalid("gitBranch is required")
	}
	if body.XataBranch == "" {
		return invalid("xataBranch is required")
	}
	replaced, err := s.eng.Branches().SetGitMapping(ws, db, body.GitBranch, body.XataBranch)
	if err != nil {
		return err
	}
	if replaced {
		writeJSON(r.ctx, http.StatusCreated, map[string]any{
			"warning": "git branch [" + body.GitBranch + "] was mapped to another branch; the mapping was replaced",
		})
		return nil
	}
	writeJSON(r.ctx, http.StatusNoContent, nil)
	return nil
}

// removeGitBranch: DELETE /dbs/{db}/gitBranches?gitBranch=.
func (s *Server) removeGitBranch(r *request) error {
	ws, db, err := r.dataDB()
	if err != nil {
		return err
	}
	git, _ := r.query("gitBranch")
	if git == "" {
		return invalid("query parameter gitBranch is required")
	}
	if _, err := s.eng.Branches().SetGitMapping(ws, db, git, ""); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusNoContent, nil)
	return nil
}

// resolveBranch: GET /dbs/{db}/resolveBranch?gitBranch=&fallbackBranch=.
func (s *Server) resolveBranch(r *request) error {
	ws, db, err := r.dataDB()
	if err != nil {
		return err
	}
	git, _ := r.query("gitBranch")
	fallback, _ := r.query("fallbackBranch")
	res, err := s.eng.Branches().Resolve(ws, db, git, fallback)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{
		"branch": res.Branch,
		"reason": map[string]any{"code": res.Code, "message": res.Message},
	})
	return nil
}
