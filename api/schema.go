package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/coppice-db/coppice/engine"
)

// Schema edit endpoints (compat-api.md §5.4): compare, apply, preview,
// update, history and push. The engine does the work; this file decodes
// operations and schemas and renders migrations.

// migrationOpRequest is a MigrationOp as requests carry it: exactly one key,
// columns in the request form of columnRequest.
type migrationOpRequest struct {
	AddTable     *engine.TableOp        `json:"addTable"`
	RemoveTable  *engine.TableOp        `json:"removeTable"`
	RenameTable  *engine.RenameTableOp  `json:"renameTable"`
	AddColumn    *addColumnRequest      `json:"addColumn"`
	RemoveColumn *engine.RemoveColumnOp `json:"removeColumn"`
	RenameColumn *engine.RenameColumnOp `json:"renameColumn"`
}

// addColumnRequest is the body of an addColumn operation.
type addColumnRequest struct {
	Table  string        `json:"table"`
	Column columnRequest `json:"column"`
}

// migrationOps converts the operations of a request; what names the list
// in messages ("operations", "schemaOperations", …).
func migrationOps(what string, in []migrationOpRequest) ([]engine.MigrationOp, error) {
	out := make([]engine.MigrationOp, 0, len(in))
	for i, o := range in {
		op := engine.MigrationOp{
			AddTable: o.AddTable, RemoveTable: o.RemoveTable, RenameTable: o.RenameTable,
			RemoveColumn: o.RemoveColumn, RenameColumn: o.RenameColumn,
		}
		n := 0
		for _, set := range []bool{o.AddTable != nil, o.RemoveTable != nil, o.RenameTable != nil, o.AddColumn != nil, o.RemoveColumn != nil, o.RenameColumn != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return nil, invalid("%s[%d]: an operation has exactly one of addTable, removeTable, renameTable, addColumn, removeColumn, renameColumn", what, i)
		}
		if o.AddColumn != nil {
			def, err := o.AddColumn.Column.def()
			if err != nil {
				return nil, invalid("%s[%d]: addColumn: %s", what, i, err.Error())
			}
			op.AddColumn = &engine.AddColumnOp{Table: o.AddColumn.Table, Column: def}
		}
		out = append(out, op)
	}
	return out, nil
}

// editsRequest is the `edits` object of apply and preview, as compare
// returns it.
type editsRequest struct {
	Operations        *[]migrationOpRequest `json:"operations"`
	SourceMigrationID *string               `json:"sourceMigrationID"`
	TargetMigrationID *string               `json:"targetMigrationID"`
}

// ops returns the operations of the edits; they are required.
func (e *editsRequest) ops() ([]engine.MigrationOp, error) {
	if e.Operations == nil {
		return nil, invalid("edits.operations is required")
	}
	return migrationOps("edits.operations", *e.Operations)
}

// schemaRequest is a Schema as clients send it back: branch details'
// tables, whose `id` and `revLinks` are ignored.
type schemaRequest struct {
	Tables *[]struct {
		Name     string          `json:"name"`
		Columns  []columnRequest `json:"columns"`
		ID       json.RawMessage `json:"id"`
		RevLinks json.RawMessage `json:"revLinks"`
	} `json:"tables"`
}

// def converts the schema; the engine validates it.
func (sr *schemaRequest) def() (engine.SchemaDef, error) {
	if sr.Tables == nil {
		return engine.SchemaDef{}, invalid("schema.tables is required")
	}
	out := engine.SchemaDef{Tables: make([]engine.TableDef, 0, len(*sr.Tables))}
	for i, t := range *sr.Tables {
		if t.Name == "" {
			return out, invalid("schema.tables[%d]: name is required", i)
		}
		td := engine.TableDef{Name: t.Name, Columns: make([]engine.ColumnDef, 0, len(t.Columns))}
		for j := range t.Columns {
			c, err := t.Columns[j].def()
			if err != nil {
				return out, invalid("schema.tables[%d] (%s): %s", i, t.Name, err.Error())
			}
			td.Columns = append(td.Columns, c)
		}
		out.Tables = append(out.Tables, td)
	}
	return out, nil
}

// comparisonJSON is the answer of both compare endpoints.
func comparisonJSON(c engine.SchemaComparison) map[string]any {
	ops := c.Operations
	if ops == nil {
		ops = []engine.MigrationOp{}
	}
	edits := map[string]any{"operations": ops}
	if c.SourceMigrationID != "" {
		edits["sourceMigrationID"] = c.SourceMigrationID
	}
	if c.TargetMigrationID != "" {
		edits["targetMigrationID"] = c.TargetMigrationID
	}
	return map[string]any{"source": c.Source, "target": c.Target, "edits": edits}
}

// compareSchema: POST /db/{dbb}/schema/compare, the branch's schema against
// the one in the body, or, when that schema has no tables, against the
// schema its schemaOperations build.
func (s *Server) compareSchema(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	var body struct {
		Schema           *schemaRequest       `json:"schema"`
		SchemaOperations []migrationOpRequest `json:"schemaOperations"`
		BranchOperations []migrationOpRequest `json:"branchOperations"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if body.Schema == nil {
		return invalid("schema is required")
	}
	target, err := body.Schema.def()
	if err != nil {
		return err
	}
	schemaOps, err := migrationOps("schemaOperations", body.SchemaOperations)
	if err != nil {
		return err
	}
	branchOps, err := migrationOps("branchOperations", body.BranchOperations)
	if err != nil {
		return err
	}
	var c engine.SchemaComparison
	if len(target.Tables) == 0 && len(schemaOps) > 0 {
		// An empty schema with operations: the operations are the
		// client's migrations, and build the target.
		c, err = s.eng.Schema().Compare(ref.Ref, engine.CompareRequest{Operations: schemaOps, Hints: branchOps})
		if engine.CodeOf(err) == engine.CodeInvalid {
			return invalid("schemaOperations: %s", err.Error())
		}
	} else {
		c, err = s.eng.Schema().Compare(ref.Ref, engine.CompareRequest{Schema: &target, Hints: append(schemaOps, branchOps...)})
	}
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, comparisonJSON(c))
	return nil
}

// compareBranchSchemas: POST /db/{dbb}/schema/compare/{branch}; source is
// this branch, target the named one ("{db}:{branch}" is accepted for the
// same database).
func (s *Server) compareBranchSchemas(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	target, err := r.param("branch")
	if err != nil {
		return err
	}
	if db, b, ok := strings.Cut(target, ":"); ok {
		if db != ref.Database {
			return invalid("branch [%s] is not a branch of database [%s]", target, ref.Database)
		}
		target = b
	}
	if target == "" {
		return invalid("the branch to compare with is required")
	}
	var body struct {
		SourceBranchOperations []migrationOpRequest `json:"sourceBranchOperations"`
		TargetBranchOperations []migrationOpRequest `json:"targetBranchOperations"`
	}
	if err := r.decode(&body, true); err != nil {
		return err
	}
	hints, err := compareHints("sourceBranchOperations", body.SourceBranchOperations, "targetBranchOperations", body.TargetBranchOperations)
	if err != nil {
		return err
	}
	c, err := s.eng.Schema().Compare(ref.Ref, engine.CompareRequest{Branch: target, Hints: hints})
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, comparisonJSON(c))
	return nil
}

// compareHints joins the two operation lists of a compare request.
func compareHints(aName string, a []migrationOpRequest, bName string, b []migrationOpRequest) ([]engine.MigrationOp, error) {
	x, err := migrationOps(aName, a)
	if err != nil {
		return nil, err
	}
	y, err := migrationOps(bName, b)
	if err != nil {
		return nil, err
	}
	return append(x, y...), nil
}

// applySchemaEdits: POST /db/{dbb}/schema/apply, the edits of a compare as
// one migration, carried over to the branch's schema when they were
// compared against another migration than its head.
func (s *Server) applySchemaEdits(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	var body struct {
		Edits *editsRequest `json:"edits"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if body.Edits == nil {
		return invalid("edits is required")
	}
	ops, err := body.Edits.ops()
	if err != nil {
		return err
	}
	ch, err := s.eng.Schema().ApplyMigration(ref.Ref, engine.MigrationRequest{Operations: ops, Source: body.Edits.SourceMigrationID})
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, schemaUpdateJSON(ch))
	return nil
}

// previewSchemaEdits: POST /db/{dbb}/schema/preview, the schema before and
// after the edits; nothing is applied.
func (s *Server) previewSchemaEdits(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	var body struct {
		Edits *editsRequest `json:"edits"`
	}
	if err := r.decode(&body, true); err != nil {
		return err
	}
	var ops []engine.MigrationOp
	if body.Edits != nil {
		if ops, err = body.Edits.ops(); err != nil {
			return err
		}
	}
	orig, upd, err := s.eng.Schema().PreviewMigration(ref.Ref, ops)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"original": orig, "updated": upd})
	return nil
}

// updateSchema: POST /db/{dbb}/schema/update, operations as one migration
// on top of parentID.
func (s *Server) updateSchema(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	var body struct {
		ParentID   *string               `json:"parentID"`
		Operations *[]migrationOpRequest `json:"operations"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if body.Operations == nil {
		return invalid("operations is required")
	}
	ops, err := migrationOps("operations", *body.Operations)
	if err != nil {
		return err
	}
	ch, err := s.eng.Schema().ApplyMigration(ref.Ref, engine.MigrationRequest{Operations: ops, Parent: body.ParentID})
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, schemaUpdateJSON(ch))
	return nil
}

// commitJSON renders a migration as a Commit of the history.
func commitJSON(m engine.Migration) map[string]any {
	out := map[string]any{
		"id": m.ID, "checksum": m.Checksum, "createdAt": formatTime(m.CreatedAt), "operations": m.Operations,
	}
	if m.Operations == nil {
		out["operations"] = []engine.MigrationOp{}
	}
	if m.ParentID != "" {
		out["parentID"] = m.ParentID
	}
	if m.Title != "" {
		out["title"] = m.Title
	}
	if m.Message != "" {
		out["message"] = m.Message
	}
	return out
}

// schemaHistory: POST /db/{dbb}/schema/history, newest first, paged by
// migration id.
func (s *Server) schemaHistory(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	var body struct {
		Page *struct {
			After  *string `json:"after"`
			Before *string `json:"before"`
			Size   *int    `json:"size"`
		} `json:"page"`
		Since *string `json:"since"`
	}
	if err := r.decode(&body, true); err != nil {
		return err
	}
	var req engine.HistoryRequest
	if p := body.Page; p != nil {
		if p.After != nil {
			req.After = *p.After
		}
		if p.Before != nil {
			req.Before = *p.Before
		}
		if p.Size != nil {
			if *p.Size < 1 {
				return invalid("page.size must be at least 1")
			}
			req.Size = *p.Size
		}
	}
	if body.Since != nil {
		req.Since = *body.Since
	}
	page, err := s.eng.Schema().History(ref.Ref, req)
	if err != nil {
		return err
	}
	logs := make([]map[string]any, 0, len(page.Migrations))
	for _, m := range page.Migrations {
		logs = append(logs, commitJSON(m))
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{
		"meta": map[string]any{"cursor": page.Cursor, "more": page.More},
		"logs": logs,
	})
	return nil
}

// pushMigrations: POST /db/{dbb}/schema/push, migrations made elsewhere,
// oldest first. A pulled Commit may be sent back as it is: its createdAt
// and mergeParentID are ignored.
func (s *Server) pushMigrations(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	var body struct {
		Migrations *[]struct {
			ID            string               `json:"id"`
			ParentID      *string              `json:"parentID"`
			Checksum      string               `json:"checksum"`
			Title         *string              `json:"title"`
			Message       *string              `json:"message"`
			Operations    []migrationOpRequest `json:"operations"`
			CreatedAt     json.RawMessage      `json:"createdAt"`
			MergeParentID json.RawMessage      `json:"mergeParentID"`
		} `json:"migrations"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if body.Migrations == nil {
		return invalid("migrations is required")
	}
	migs := make([]engine.Migration, 0, len(*body.Migrations))
	for i, m := range *body.Migrations {
		if m.ID == "" {
			return invalid("migrations[%d]: id is required", i)
		}
		if m.Checksum == "" {
			return invalid("migrations[%d]: checksum is required", i)
		}
		ops, err := migrationOps("migrations["+strconv.Itoa(i)+"].operations", m.Operations)
		if err != nil {
			return err
		}
		mig := engine.Migration{ID: m.ID, Checksum: m.Checksum, Operations: ops}
		if m.ParentID != nil {
			mig.ParentID = *m.ParentID
		}
		if m.Title != nil {
			mig.Title = *m.Title
		}
		if m.Message != nil {
			mig.Message = *m.Message
		}
		migs = append(migs, mig)
	}
	ch, err := s.eng.Schema().PushMigrations(ref.Ref, migs)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, schemaUpdateJSON(ch))
	return nil
}
