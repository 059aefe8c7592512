package api

import (
	"net/http"
	"strings"

	"github.com/coppice-db/coppice/engine"
)

// columnRequest is a column definition as requests carry it: the public
// Column of compat-api.md §5.2 plus the `fileMap` alias of `file[]`.
type columnRequest struct {
	Name         string            `json:"name"`
	Type         string            `json:"type"`
	Link         *engine.LinkDef   `json:"link"`
	Vector       *engine.VectorDef `json:"vector"`
	File         *engine.FileDef   `json:"file"`
	FileArray    *engine.FileDef   `json:"file[]"`
	FileMap      *engine.FileDef   `json:"fileMap"`
	NotNull      bool              `json:"notNull"`
	DefaultValue *string           `json:"defaultValue"`
	Unique       bool              `json:"unique"`
	Columns      []columnRequest   `json:"columns"`
}

// def converts the request to the engine's definition; the engine validates
// it against the schema.
func (c *columnRequest) def() (engine.ColumnDef, error) {
	d := engine.ColumnDef{
		Name: c.Name, Type: engine.ColumnType(c.Type), Link: c.Link, Vector: c.Vector, File: c.File,
		FileArray: c.FileArray, NotNull: c.NotNull, DefaultValue: c.DefaultValue, Unique: c.Unique,
	}
	if d.Type == "fileMap" {
		d.Type = engine.TypeFileArray
	}
	if c.FileMap != nil {
		if c.FileArray != nil {
			return d, invalid("column [%s]: set file[] or fileMap, not both", c.Name)
		}
		d.FileArray = c.FileMap
	}
	if c.Name == "" {
		return d, invalid("column name is required")
	}
	for i := range c.Columns {
		sub, err := c.Columns[i].def()
		if err != nil {
			return d, err
		}
		d.Columns = append(d.Columns, sub)
	}
	return d, nil
}

// schemaUpdateJSON is the SchemaUpdateResponse of compat-api.md §5.1.
func schemaUpdateJSON(ch engine.SchemaChange) map[string]any {
	return map[string]any{"migrationID": ch.MigrationID, "parentMigrationID": ch.ParentMigrationID, "status": "completed"}
}

// createTable: PUT T. Any body is ignored.
func (s *Server) createTable(r *request) error {
	ref, table, err := r.tableRef()
	if err != nil {
		return err
	}
	if _, err := s.eng.Schema().CreateTable(ref.Ref, table); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusCreated, map[string]any{"branchName": ref.Raw, "tableName": table, "status": "completed"})
	return nil
}

// deleteTable: DELETE T.
func (s *Server) deleteTable(r *request) error {
	ref, table, err := r.tableRef()
	if err != nil {
		return err
	}
	if _, err := s.eng.Schema().DeleteTable(ref.Ref, table); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"status": "completed"})
	return nil
}

// updateTable: PATCH T; renaming is the only update.
func (s *Server) updateTable(r *request) error {
	ref, table, err := r.tableRef()
	if err != nil {
		return err
	}
	var body struct {
		Name string `json:"name"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if body.Name == "" {
		return invalid("name is required")
	}
	ch, err := s.eng.Schema().RenameTable(ref.Ref, table, body.Name)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, schemaUpdateJSON(ch))
	return nil
}

// getTableSchema: GET T/schema, the columns as defined (objects nested).
func (s *Server) getTableSchema(r *request) error {
	ref, table, err := r.tableRef()
	if err != nil {
		return err
	}
	cols, err := s.tableColumns(ref.Ref, table)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"columns": cols})
	return nil
}

// setTableSchema: PUT T/schema replaces the column set.
func (s *Server) setTableSchema(r *request) error {
	ref, table, err := r.tableRef()
	if err != nil {
		return err
	}
	var body struct {
		Columns *[]columnRequest `json:"columns"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if body.Columns == nil {
		return invalid("columns is required")
	}
	defs := make([]engine.ColumnDef, 0, len(*body.Columns))
	for i := range *body.Columns {
		d, err := (*body.Columns)[i].def()
		if err != nil {
			return err
		}
		defs = append(defs, d)
	}
	ch, err := s.eng.Schema().SetTableColumns(ref.Ref, table, defs)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, schemaUpdateJSON(ch))
	return nil
}

// listColumns: GET T/columns, object sub-columns flattened to dotted names.
func (s *Server) listColumns(r *request) error {
	ref, table, err := r.tableRef()
	if err != nil {
		return err
	}
	cols, err := s.tableColumns(ref.Ref, table)
	if err != nil {
		return err
	}
	out := []engine.ColumnDef{}
	var walk func(prefix string, cols []engine.ColumnDef)
	walk = func(prefix string, cols []engine.ColumnDef) {
		for _, c := range cols {
			if c.Type == engine.TypeObject {
				walk(prefix+c.Name+".", c.Columns)
				continue
			}
			c.Name = prefix + c.Name
			out = append(out, c)
		}
	}
	walk("", cols)
	writeJSON(r.ctx, http.StatusOK, map[string]any{"columns": out})
	return nil
}

// findColumn returns the definition at a dotted path.
func findColumn(cols []engine.ColumnDef, path string) (engine.ColumnDef, bool) {
	name, rest, nested := strings.Cut(path, ".")
	for _, c := range cols {
		if c.Name != name {
			continue
		}
		if !nested {
			return c, true
		}
		if c.Type == engine.TypeObject {
			return findColumn(c.Columns, rest)
		}
	}
	return engine.ColumnDef{}, false
}

// columnParam resolves T/columns/{column} paths.
func (r *request) columnParam() (dbRef, string, string, error) {
	ref, table, err := r.tableRef()
	if err != nil {
		return ref, "", "", err
	}
	col, err := r.param("column")
	return ref, table, col, err
}

// addColumn: POST T/columns.
func (s *Server) addColumn(r *request) error {
	ref, table, err := r.tableRef()
	if err != nil {
		return err
	}
	var body columnRequest
	if err := r.decode(&body, false); err != nil {
		return err
	}
	def, err := body.def()
	if err != nil {
		return err
	}
	ch, err := s.eng.Schema().AddColumn(ref.Ref, table, def)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, schemaUpdateJSON(ch))
	return nil
}

// getColumn: GET T/columns/{column}.
func (s *Server) getColumn(r *request) error {
	ref, table, col, err := r.columnParam()
	if err != nil {
		return err
	}
	cols, err := s.tableColumns(ref.Ref, table)
	if err != nil {
		return err
	}
	c, ok := findColumn(cols, col)
	if !ok {
		return engine.Errorf(engine.CodeNotFound, "column [%s] not found", col)
	}
	writeJSON(r.ctx, http.StatusOK, c)
	return nil
}

// renameColumn: PATCH T/columns/{column}, body {"name"} only.
func (s *Server) renameColumn(r *request) error {
	ref, table, col, err := r.columnParam()
	if err != nil {
		return err
	}
	var body struct {
		Name string `json:"name"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if body.Name == "" {
		return invalid("name is required")
	}
	ch, err := s.eng.Schema().RenameColumn(ref.Ref, table, col, body.Name)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, schemaUpdateJSON(ch))
	return nil
}

// deleteColumn: DELETE T/columns/{column}.
func (s *Server) deleteColumn(r *request) error {
	ref, table, col, err := r.columnParam()
	if err != nil {
		return err
	}
	ch, err := s.eng.Schema().DeleteColumn(ref.Ref, table, col)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, schemaUpdateJSON(ch))
	return nil
}

// tableColumns returns a table's columns as defined (objects nested).
func (s *Server) tableColumns(ref engine.Ref, table string) ([]engine.ColumnDef, error) {
	det, err := s.eng.Branches().Details(ref)
	if err != nil {
		return nil, err
	}
	t, err := det.Schema.Table(table)
	if err != nil {
		return nil, err
	}
	return t.Columns, nil
}
