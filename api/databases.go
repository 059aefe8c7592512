package api

import (
	"net/http"
	"slices"

	"github.com/coppice-db/coppice/engine"
)

// region is one entry of GET /workspaces/{ws}/regions.
type region struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// legacyRegions are the region ids of the legacy service, the default in
// compat mode (client test harnesses create databases in them).
var legacyRegions = []region{
	{"eu-west-1", "Ireland"},
	{"ap-southeast-2", "Sydney"},
	{"eu-central-1", "Frankfurt"},
	{"us-east-1", "N. Virginia"},
	{"us-west-2", "Oregon"},
}

// configuredRegions returns the regions list: the configured ids (named
// after the legacy list where they match), else the mode's default.
func configuredRegions(compat string, ids []string) []region {
	if len(ids) == 0 {
		if compat == CompatXata {
			return slices.Clone(legacyRegions)
		}
		return []region{{"local", "Local"}}
	}
	out := make([]region, 0, len(ids))
	for _, id := range ids {
		if id == "" || slices.ContainsFunc(out, func(r region) bool { return r.ID == id }) {
			continue
		}
		name := id
		if i := slices.IndexFunc(legacyRegions, func(r region) bool { return r.ID == id }); i >= 0 {
			name = legacyRegions[i].Name
		}
		out = append(out, region{id, name})
	}
	return out
}

// hasRegion reports whether databases may be created in region id.
func (s *Server) hasRegion(id string) bool {
	return slices.ContainsFunc(s.regions, func(r region) bool { return r.ID == id })
}

// databaseJSON is database metadata (spec §2.8).
func databaseJSON(d engine.DatabaseInfo) map[string]any {
	out := map[string]any{"name": d.Name, "region": d.Region, "createdAt": formatTime(d.CreatedAt)}
	if d.UIColor != "" {
		out["ui"] = map[string]any{"color": d.UIColor}
	}
	return out
}

// listRegions: GET /workspaces/{ws}/regions.
func (s *Server) listRegions(r *request) error {
	if _, err := r.controlWorkspace(); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"regions": s.regions})
	return nil
}

// listDatabases: GET /workspaces/{ws}/dbs.
func (s *Server) listDatabases(r *request) error {
	ws, err := r.controlWorkspace()
	if err != nil {
		return err
	}
	list := s.eng.ListDatabases(ws)
	out := make([]map[string]any, 0, len(list))
	for _, d := range list {
		out = append(out, databaseJSON(d))
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"databases": out})
	return nil
}

// uiSettings is the ui object of database requests.
type uiSettings struct {
	Color *string `json:"color"`
}

// createDatabase: PUT /workspaces/{ws}/dbs/{db}.
func (s *Server) createDatabase(r *request) error {
	ws, name, err := r.controlDatabase()
	if err != nil {
		return err
	}
	var body struct {
		BranchName *string                `json:"branchName"`
		Region     string                 `json:"region"`
		UI         *uiSettings            `json:"ui"`
		Metadata   *branchMetadataRequest `json:"metadata"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if body.Region == "" {
		return invalid("region is required")
	}
	if !s.hasRegion(body.Region) {
		return invalid("region [%s] is not available; see GET /workspaces/{ws}/regions", body.Region)
	}
	req := engine.CreateDatabaseRequest{Workspace: ws, Name: name, Region: body.Region}
	if body.BranchName != nil {
		if *body.BranchName == "" {
			return invalid("branchName must not be empty")
		}
		req.BranchName = *body.BranchName
	}
	if body.UI != nil && body.UI.Color != nil {
		req.UIColor = *body.UI.Color
	}
	if body.Metadata != nil {
		md, err := body.Metadata.metadata()
		if err != nil {
			return err
		}
		req.Metadata = md
	}
	if _, err := s.eng.CreateDatabase(req); err != nil {
		return err
	}
	branch := req.BranchName
	if branch == "" {
		branch = "main"
	}
	writeJSON(r.ctx, http.StatusCreated, map[string]any{"databaseName": name, "branchName": branch, "status": "completed"})
	return nil
}

// getDatabase: GET /workspaces/{ws}/dbs/{db}.
func (s *Server) getDatabase(r *request) error {
	ws, name, err := r.controlDatabase()
	if err != nil {
		return err
	}
	d, err := s.eng.GetDatabase(ws, name)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, databaseJSON(d))
	return nil
}

// updateDatabase: PATCH /workspaces/{ws}/dbs/{db}. An unknown database is
// a 404, or a 400 in compat mode as the legacy API answered.
func (s *Server) updateDatabase(r *request) error {
	ws, name, err := r.controlDatabase()
	if err != nil {
		return err
	}
	var body struct {
		UI *uiSettings `json:"ui"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if body.UI == nil || body.UI.Color == nil {
		return invalid("nothing to update: set ui.color")
	}
	if *body.UI.Color == "" {
		return invalid("ui.color must not be empty")
	}
	d, err := s.eng.UpdateDatabase(ws, name, "", body.UI.Color)
	if engine.CodeOf(err) == engine.CodeNotFound && s.opts.Compat == CompatXata {
		return invalid("database [%s] not found", name)
	}
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, databaseJSON(d))
	return nil
}

// renameDatabase: POST /workspaces/{ws}/dbs/{db}/rename.
func (s *Server) renameDatabase(r *request) error {
	ws, name, err := r.controlDatabase()
	if err != nil {
		return err
	}
	var body struct {
		NewName string `json:"newName"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if body.NewName == "" {
		return invalid("newName is required")
	}
	d, err := s.eng.UpdateDatabase(ws, name, body.NewName, nil)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, databaseJSON(d))
	return nil
}

// deleteDatabase: DELETE /workspaces/{ws}/dbs/{db}.
func (s *Server) deleteDatabase(r *request) error {
	ws, name, err := r.controlDatabase()
	if err != nil {
		return err
	}
	if err := s.eng.DeleteDatabase(ws, name); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"status": "completed"})
	return nil
}

// controlDatabase returns the workspace and database name of a
// /workspaces/{ws}/dbs/{db} path.
func (r *request) controlDatabase() (ws, name string, err error) {
	if ws, err = r.controlWorkspace(); err != nil {
		return "", "", err
	}
	name, err = r.param("db")
	return ws, name, err
}
