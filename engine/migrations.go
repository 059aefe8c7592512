package engine

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Schema edits (compat-api.md §5.4): comparing schemas into operations,
// applying a list of operations as one migration, previewing it, the
// history of a branch's migrations, and pushing migrations made elsewhere.
// Every change goes through changeSchema and applyOp of tables.go, so an
// operation means the same in a list as in its single endpoint; the one
// exception is the removeColumn and addColumn pair that changes a column's
// settings (columnsettings.go). Edits compared against another migration
// than the branch's head carry over to it as rebase.go describes.

// CompareRequest names what CompareSchema compares a branch's schema with:
// exactly one of Schema, Operations and Branch.
type CompareRequest struct {
	// Schema is a target schema. It is validated as a whole: names, types,
	// settings and link targets.
	Schema *SchemaDef
	// Operations build the target from an empty schema: a client that
	// keeps its migrations as files sends them this way. Renames among
	// them count as hints. Operations that fail to build a schema are
	// CodeInvalid, naming the operation.
	Operations []MigrationOp
	// Branch names another branch of the same database, whose schema is
	// the target.
	Branch string
	// Hints are operations that tell renames apart from removals and
	// additions: only their renameTable and renameColumn count.
	Hints []MigrationOp
}

// SchemaComparison is the answer of CompareSchema: the operations that
// turn Source into Target.
type SchemaComparison struct {
	Source, Target SchemaDef
	Operations     []MigrationOp
	// SourceMigrationID is the head of the compared branch ("" before its
	// first migration); TargetMigrationID the head of the target branch
	// when the target is a branch.
	SourceMigrationID, TargetMigrationID string
}

// HistoryRequest selects a page of a branch's history. After and Before are
// migration ids of an earlier page (at most one of them); Since, when set,
// keeps only the migrations newer than that one. Size 0 means
// DefaultHistoryPageSize.
type HistoryRequest struct {
	After, Before, Since string
	Size                 int
}

// HistoryPage is one page of a branch's history, newest first. Cursor is
// the id of its last migration, for After; More tells whether more
// migrations lie beyond the page in the direction it was read.
type HistoryPage struct {
	Migrations []Migration
	Cursor     string
	More       bool
}

// Page sizes of SchemaHistory.
const (
	DefaultHistoryPageSize = 20
	MaxHistoryPageSize     = 1000
)

// migrationIDPattern is the form of migration ids: "mig_" and 20 characters
// of base32hex, as IDGen makes them.
var migrationIDPattern = regexp.MustCompile(`^mig_[0-9a-v]{20}$`)

// MigrationRequest is a list of schema operations to apply as one
// migration.
type MigrationRequest struct {
	Operations []MigrationOp
	// Parent, when set, is the migration the branch's head must be ("" for
	// a branch without migrations).
	Parent *string
	// Source, when set, is the migration the operations were compared
	// against: when it is not the branch's head, they carry over to the
	// branch's schema as rebase.go describes, and those that the branch
	// already has are skipped. A source that is not in the history of any
	// branch of the database is CodeInvalid.
	Source *string
}

// ApplyMigration applies operations, in order and step by step (see
// stepLen), as one migration in one command: if any of them fails, nothing
// changes and the error names it. An empty list, or edits that change
// nothing on the branch, record nothing and return the head.
func (sc *Schema) ApplyMigration(ref Ref, req MigrationRequest) (SchemaChange, error) {
	e := sc.e
	if len(req.Operations) == 0 {
		return e.headChange(ref, req.Parent)
	}
	out, err := e.changeSchema(ref, &apply.Migrate{SchemaHeader: apply.SchemaHeader{Parent: req.Parent}, Ops: req.Operations, Source: req.Source})
	if errors.Is(err, apply.ErrNoChange) {
		return e.headChange(ref, req.Parent)
	}
	return out, err
}

// PreviewMigration returns a branch's schema and the schema it would have
// after ApplyMigration of ops. The operations run as in a command
// that is then discarded, so a preview fails exactly where the apply would,
// and changes nothing.
func (sc *Schema) PreviewMigration(ref Ref, ops []MigrationOp) (original, updated SchemaDef, err error) {
	e := sc.e
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return original, updated, err
	}
	original, updated, err = e.ap.PreviewMigration(d.ID, ref.Branch, ops)
	return original, updated, err
}

// headChange answers a change that changes nothing: the head and its
// parent, after checking parent against the head.
func (e *Engine) headChange(ref Ref, parent *string) (SchemaChange, error) {
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return SchemaChange{}, err
	}
	st := d.State()
	b, err := st.Branch(ref.Branch)
	if err != nil {
		return SchemaChange{}, err
	}
	if parent != nil && *parent != b.LastMigrationID {
		return SchemaChange{}, apply.NotHead(*parent, b)
	}
	out := SchemaChange{MigrationID: b.LastMigrationID}
	if b.LastMigrationID == "" {
		return out, nil
	}
	chain, err := apply.MigrationChain(e.pdb, d.ID, st, b)
	if err != nil {
		return SchemaChange{}, err
	}
	for _, m := range chain {
		if m.ID == b.LastMigrationID {
			out.ParentMigrationID = m.ParentID
			break
		}
	}
	return out, nil
}

// Compare compares a branch's schema with the target req names and
// returns the operations that turn one into the other. Renames are only
// found through the renameTable and renameColumn operations of the hints
// (other operations there are ignored); without them a renamed table or
// column is a removal and an addition.
func (sc *Schema) Compare(ref Ref, req CompareRequest) (SchemaComparison, error) {
	e := sc.e
	det, err := e.branches.Details(ref)
	if err != nil {
		return SchemaComparison{}, err
	}
	out := SchemaComparison{Source: det.Schema, SourceMigrationID: det.LastMigrationID}
	hints := req.Hints
	switch {
	case req.Schema != nil:
		if out.Target, err = normalizeSchema(*req.Schema); err != nil {
			return SchemaComparison{}, err
		}
	case req.Branch != "":
		tref := ref
		tref.Branch = req.Branch
		dst, err := e.branches.Details(tref)
		if err != nil {
			return SchemaComparison{}, err
		}
		out.Target, out.TargetMigrationID = dst.Schema, dst.LastMigrationID
	default:
		s, err := apply.BuildSchema(req.Operations)
		if err != nil {
			return SchemaComparison{}, err
		}
		out.Target = s.Public()
		hints = append(append([]MigrationOp(nil), req.Operations...), hints...)
	}
	out.Operations = diffSchemas(out.Source, out.Target, hints)
	return out, nil
}

// normalizeSchema validates a schema as the engine would build it and
// returns it in the form branch details show, so that equal definitions
// compare equal (fileMap becomes file[], empty settings disappear).
func normalizeSchema(def SchemaDef) (SchemaDef, error) {
	s := &model.Schema{}
	for i, td := range def.Tables {
		if err := model.CheckName("table", td.Name); err != nil {
			return SchemaDef{}, err
		}
		for _, t := range s.Tables {
			if strings.EqualFold(t.Name, td.Name) {
				return SchemaDef{}, model.Invalidf("table [%s] is defined twice", td.Name)
			}
		}
		s.Tables = append(s.Tables, &model.Table{ID: uint32(i + 1), Name: td.Name, Columns: []*model.Column{}})
	}
	s.Index()
	for i, td := range def.Tables {
		t := s.Tables[i]
		seen := map[string]bool{}
		for _, cd := range td.Columns {
			if seen[cd.Name] {
				return SchemaDef{}, model.Invalidf("table [%s]: column [%s] is defined twice", td.Name, cd.Name)
			}
			seen[cd.Name] = true
			c, err := s.NewColumn(t, cd, "")
			if err != nil {
				return SchemaDef{}, model.Invalidf("table [%s]: %s", td.Name, err.Error())
			}
			t.Columns = append(t.Columns, c)
		}
	}
	s.Index()
	return s.Public(), nil
}

// diffSchemas returns the operations that turn src into dst, in the order
// of compat-api.md §5.4: renames taken from hints (tables, then columns),
// every addTable, then addColumn, then removeColumn, then removeTable.
// Since every table exists before the first addColumn, link columns need no
// later place, and columns are added in the target's order, so a new table
// gets its columns in that order. A column whose definition changed is a
// removeColumn immediately followed by its addColumn: applied as a list,
// the pair keeps the column's values when its kind stays (stepLen). Both
// schemas are in normalized form.
func diffSchemas(src, dst SchemaDef, hints []MigrationOp) []MigrationOp {
	type wtable struct {
		name string
		cols []ColumnDef
	}
	work := make([]*wtable, 0, len(src.Tables))
	byName := map[string]*wtable{}
	for _, t := range src.Tables {
		w := &wtable{name: t.Name, cols: append([]ColumnDef(nil), t.Columns...)}
		work = append(work, w)
		byName[t.Name] = w
	}
	dstByName := map[string]TableDef{}
	for _, t := range dst.Tables {
		dstByName[t.Name] = t
	}
	inDst := func(name string) bool { _, ok := dstByName[name]; return ok }

	var renames, addTables, addCols, removeCols, removeTables []MigrationOp
	renamed := map[string]string{} // old table name → new
	for _, h := range hints {
		r := h.RenameTable
		if r == nil || r.OldName == r.NewName {
			continue
		}
		w := byName[r.OldName]
		if w == nil || byName[r.NewName] != nil || !inDst(r.NewName) || inDst(r.OldName) {
			continue
		}
		delete(byName, r.OldName)
		w.name = r.NewName
		byName[r.NewName] = w
		renamed[r.OldName] = r.NewName
		for _, o := range work {
			renameLinkTargets(o.cols, r.OldName, r.NewName)
		}
		renames = append(renames, MigrationOp{RenameTable: &RenameTableOp{OldName: r.OldName, NewName: r.NewName}})
	}
	for _, h := range hints {
		r := h.RenameColumn
		if r == nil || r.OldName == r.NewName || strings.Contains(r.OldName, ".") || strings.Contains(r.NewName, ".") {
			continue
		}
		w := byName[r.Table]
		if w == nil {
			w = byName[renamed[r.Table]]
		}
		if w == nil || !inDst(w.name) {
			continue
		}
		dt := dstByName[w.name]
		i := columnIndex(w.cols, r.OldName)
		if i < 0 || columnIndex(w.cols, r.NewName) >= 0 || columnIndex(dt.Columns, r.NewName) < 0 || columnIndex(dt.Columns, r.OldName) >= 0 {
			continue
		}
		w.cols[i].Name = r.NewName
		renames = append(renames, MigrationOp{RenameColumn: &RenameColumnOp{Table: w.name, OldName: r.OldName, NewName: r.NewName}})
	}

	add := func(table string, c ColumnDef, replace bool) {
		if replace {
			addCols = append(addCols, MigrationOp{RemoveColumn: &RemoveColumnOp{Table: table, Column: c.Name}})
		}
		addCols = append(addCols, MigrationOp{AddColumn: &AddColumnOp{Table: table, Column: c}})
	}
	for _, dt := range dst.Tables {
		w := byName[dt.Name]
		if w == nil {
			addTables = append(addTables, MigrationOp{AddTable: &TableOp{Table: dt.Name}})
			for _, c := range dt.Columns {
				add(dt.Name, c, false)
			}
			continue
		}
		for _, c := range dt.Columns {
			i := columnIndex(w.cols, c.Name)
			if i < 0 {
				add(dt.Name, c, false)
			} else if !sameColumn(w.cols[i], c) {
				add(dt.Name, c, true)
			}
		}
		for _, c := range w.cols {
			if columnIndex(dt.Columns, c.Name) < 0 {
				removeCols = append(removeCols, MigrationOp{RemoveColumn: &RemoveColumnOp{Table: w.name, Column: c.Name}})
			}
		}
	}
	for _, w := range work {
		if inDst(w.name) {
			continue
		}
		// A link between two removed tables would stop the first
		// removeTable: such columns go first.
		for _, c := range w.cols {
			if linksTo(c, func(t string) bool { return t != w.name && byName[t] != nil && !inDst(t) }) {
				removeCols = append(removeCols, MigrationOp{RemoveColumn: &RemoveColumnOp{Table: w.name, Column: c.Name}})
			}
		}
		removeTables = append(removeTables, MigrationOp{RemoveTable: &TableOp{Table: w.name}})
	}
	out := make([]MigrationOp, 0, len(renames)+len(addTables)+len(addCols)+len(removeCols)+len(removeTables))
	for _, part := range [][]MigrationOp{renames, addTables, addCols, removeCols, removeTables} {
		out = append(out, part...)
	}
	return out
}

// columnIndex returns the index of the column named name, or -1.
func columnIndex(cols []ColumnDef, name string) int {
	for i, c := range cols {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// sameColumn reports whether two normalized definitions are equal.
func sameColumn(a, b ColumnDef) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// linksTo reports whether a column is, or holds, a link to a table for
// which match is true.
func linksTo(c ColumnDef, match func(table string) bool) bool {
	if c.Type == TypeLink && c.Link != nil && match(c.Link.Table) {
		return true
	}
	for _, sc := range c.Columns {
		if linksTo(sc, match) {
			return true
		}
	}
	return false
}

// renameLinkTargets points the links to table old at table new. Link
// settings are shared with the source schema, so they are replaced, not
// changed in place.
func renameLinkTargets(cols []ColumnDef, old, new string) {
	for i := range cols {
		c := &cols[i]
		if c.Type == TypeLink && c.Link != nil && c.Link.Table == old {
			c.Link = &LinkDef{Table: new}
		}
		if len(c.Columns) > 0 {
			c.Columns = append([]ColumnDef(nil), c.Columns...)
			renameLinkTargets(c.Columns, old, new)
		}
	}
}

// History returns a page of a branch's migrations, newest first. The
// history of a branch continues, past its first own migration, with the
// history of the branch it was created from, up to the migration it was
// created at; it stops at a source branch that has been deleted.
func (sc *Schema) History(ref Ref, req HistoryRequest) (HistoryPage, error) {
	e := sc.e
	size := req.Size
	switch {
	case size == 0:
		size = DefaultHistoryPageSize
	case size < 0:
		return HistoryPage{}, model.Invalidf("page size must be positive")
	case size > MaxHistoryPageSize:
		return HistoryPage{}, model.Invalidf("page size exceeds max limit of %d", MaxHistoryPageSize)
	}
	if req.After != "" && req.Before != "" {
		return HistoryPage{}, model.Invalidf("page.after and page.before cannot be used together")
	}
	b, chain, err := e.branchHistory(ref)
	if err != nil {
		return HistoryPage{}, err
	}
	find := func(what, id string) (int, error) {
		for i, m := range chain {
			if m.ID == id {
				return i, nil
			}
		}
		return 0, model.Invalidf("%s: migration [%s] is not in the history of branch [%s]", what, id, b.Name)
	}
	if req.Since != "" {
		i, err := find("since", req.Since)
		if err != nil {
			return HistoryPage{}, err
		}
		chain = chain[:i]
	}
	var page HistoryPage
	switch {
	case req.Before != "":
		i, err := find("page.before", req.Before)
		if err != nil {
			return HistoryPage{}, err
		}
		lo := max(0, i-size)
		page.Migrations, page.More = chain[lo:i], lo > 0
	default:
		lo := 0
		if req.After != "" {
			i, err := find("page.after", req.After)
			if err != nil {
				return HistoryPage{}, err
			}
			lo = i + 1
		}
		hi := min(len(chain), lo+size)
		page.Migrations, page.More = chain[lo:hi], hi < len(chain)
	}
	if n := len(page.Migrations); n > 0 {
		page.Cursor = page.Migrations[n-1].ID
	} else {
		page.Cursor = req.After + req.Before
	}
	return page, nil
}

// branchHistory returns a branch and its migrations, as migrationChain
// lists them.
func (e *Engine) branchHistory(ref Ref) (*model.Branch, []Migration, error) {
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return nil, nil, err
	}
	st := d.State()
	b, err := st.Branch(ref.Branch)
	if err != nil {
		return nil, nil, err
	}
	chain, err := apply.MigrationChain(e.pdb, d.ID, st, b)
	return b, chain, err
}

// PushMigrations appends migrations made elsewhere, oldest first, keeping
// their ids. Migrations whose id is already in the branch's history are
// skipped; each other one must name the head as its parent (the previous
// pushed migration, or the branch's head for the first) and carry the
// checksum of its parent and operations. Those checks run before anything
// is applied. Each migration is then applied atomically in its own
// command; if one fails, the ones before it stay applied, and pushing the
// same list again skips them. The result is the new head.
func (sc *Schema) PushMigrations(ref Ref, migs []Migration) (SchemaChange, error) {
	e := sc.e
	b, chain, err := e.branchHistory(ref)
	if err != nil {
		return SchemaChange{}, err
	}
	known := make(map[string]bool, len(chain))
	for _, m := range chain {
		known[m.ID] = true
	}
	head := b.LastMigrationID
	var todo []Migration
	for i, m := range migs {
		if !migrationIDPattern.MatchString(m.ID) {
			return SchemaChange{}, model.Invalidf("migration %d: id [%s] is not mig_ followed by 20 characters of [0-9a-v]", i+1, m.ID)
		}
		if m.Checksum != model.MigrationChecksum(m.ParentID, m.Operations) {
			return SchemaChange{}, model.Invalidf("migration [%s]: checksum mismatch", m.ID)
		}
		if known[m.ID] {
			continue
		}
		if m.ParentID != head {
			return SchemaChange{}, model.Invalidf("migration [%s]: parent [%s] is not the head [%s]", m.ID, m.ParentID, head)
		}
		if len(m.Operations) == 0 {
			return SchemaChange{}, model.Invalidf("migration [%s]: operations are required", m.ID)
		}
		known[m.ID] = true
		head = m.ID
		todo = append(todo, m)
	}
	if len(todo) == 0 {
		return e.headChange(ref, nil)
	}
	var out SchemaChange
	for _, m := range todo {
		parent := m.ParentID
		cmd := &apply.PushMigration{SchemaHeader: apply.SchemaHeader{ID: m.ID, Parent: &parent, Title: m.Title, Message: m.Message}, Ops: m.Operations}
		if out, err = e.changeSchema(ref, cmd); err != nil {
			return SchemaChange{}, err
		}
	}
	return out, nil
}
