package apply

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// replaySeed fixes the seed of TestReplayRandomLog; 0 draws one.
var replaySeed = flag.Uint64("replay-seed", 0, "seed of TestReplayRandomLog (0: random)")

// TestReplayRandomLog applies a random log of commands of every kind, of
// the catalog and of several databases, to two data directories: one gets
// each command as made, the other its encoded and decoded copy, as the
// replicas of a replicated log do, and without the work a write of new
// records prepares before the writer lock (prepare.go), as a replica's
// state machine applies it. Both must answer every command alike
// (the same result or the same error) and end byte-identical, database
// range by database range and in the catalog. Invalid commands are part of
// the log on purpose: a command that fails must fail everywhere. The seed
// is printed; -replay-seed replays a log.
func TestReplayRandomLog(t *testing.T) {
	seed := *replaySeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -replay-seed %d)", seed, seed)
	steps := 5000
	if testing.Short() {
		steps = 1500
	}
	defer func(n int) { prepareMinOps = n }(prepareMinOps)
	prepareMinOps = 1
	g := newLogGen(seed)
	a, b := openReplayReplica(t), openReplayReplica(t)
	seenDB := map[dbKind]bool{}
	// okKinds counts the commands that applied, by type.
	okKinds := map[string]int{}
	seenCat := map[byte]bool{}
	for i := 0; i < steps; i++ {
		cmd := g.next(a)
		enc, err := Encode(cmd)
		if err != nil {
			t.Fatalf("seed %d step %d: encode %T%T: %v", seed, i, cmd.DB, cmd.Catalog, err)
		}
		if cmd.DB != nil {
			seenDB[cmd.DB.kind()] = true
		} else {
			seenCat[enc[2]] = true // plane, version, kind
		}
		dec, err := Decode(enc)
		if err != nil {
			t.Fatalf("seed %d step %d: decode %T%T: %v", seed, i, cmd.DB, cmd.Catalog, err)
		}
		resA, errA := a.Apply(cmd)
		var resB any
		var errB error
		if cmd.DB != nil {
			resB, errB = b.applyWith(dec, func(*pebble.Batch, any) error { return nil })
		} else {
			resB, errB = b.Apply(dec)
		}
		if errA != nil {
			g.failed++
		}
		if fmt.Sprint(errA) != fmt.Sprint(errB) || model.CodeOf(errA) != model.CodeOf(errB) {
			t.Fatalf("seed %d step %d: %T%T fails differently: %v / %v", seed, i, cmd.DB, cmd.Catalog, errA, errB)
		}
		if errA == nil {
			x, err := EncodeResult(cmd, resA)
			if err != nil {
				t.Fatalf("seed %d step %d: result of %T%T: %v", seed, i, cmd.DB, cmd.Catalog, err)
			}
			y, _ := EncodeResult(dec, resB)
			if !bytes.Equal(x, y) {
				t.Fatalf("seed %d step %d: %T%T gives %s and %s", seed, i, cmd.DB, cmd.Catalog, x, y)
			}
			g.applied(cmd, resA)
			if cmd.DB != nil {
				okKinds[fmt.Sprintf("%T", cmd.DB)]++
			} else {
				okKinds[fmt.Sprintf("%T", cmd.Catalog)]++
			}
		}
		if errA == nil && cmd.DB != nil {
			if s, ok := cmd.DB.(*StartFlatten); ok {
				// The copy between the two flatten commands, on each side.
				layer := resA.(uint32)
				g.flattening = &FinishFlatten{Branch: s.Branch, Frozen: s.Frozen, Layer: layer}
				g.flattenDB = cmd.Database
				for _, r := range []*Applier{a, b} {
					d := r.DB(cmd.Database)
					if err := r.Materialize(d.ID, d.State().ByID.At(s.Branch).Schema, s.Frozen, layer); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if i%100 == 99 {
			compareReplicas(t, seed, i, a, b)
		}
	}
	compareReplicas(t, seed, steps, a, b)
	for k := range dbCommands {
		if !seenDB[k] {
			t.Errorf("seed %d: database command kind %d never ran", seed, k)
		}
	}
	for k := range 256 {
		// Every kind the catalog decodes is a kind it has.
		if _, err := catalog.Decode([]byte{1, byte(k), '{', '}'}); err == nil && !seenCat[byte(k)] {
			t.Errorf("seed %d: catalog command kind %d never ran", seed, k)
		}
	}
	// The kinds that change most must also have applied, not only failed.
	for _, k := range []string{"*apply.WriteRecords", "*apply.CreateBranch", "*apply.DeleteBranch", "*apply.SchemaOp",
		"*apply.Migrate", "*apply.SetTableColumns", "*apply.StartFlatten", "*apply.FinishFlatten",
		"*catalog.PlaceDatabase", "*catalog.RestoreDatabase", "*catalog.DropDatabase", "*catalog.CreateUser"} {
		if okKinds[k] == 0 {
			t.Errorf("seed %d: no %s applied", seed, k)
		}
	}
	t.Logf("%d commands, %d failed alike; %d databases; applied: %v", steps, g.failed, len(a.Catalog().DatabaseIDs()), okKinds)
}

// openReplayReplica opens an empty data directory.
func openReplayReplica(t *testing.T) *Applier {
	t.Helper()
	pdb, err := pebble.Open(t.TempDir(), &pebble.Options{Merger: layers.Merger, Logger: quietLogger{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pdb.Close() })
	a, err := Open(pdb, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// compareReplicas fails unless a and b hold the same bytes: the catalog,
// then every database range, each compared on its own to say which
// differs.
func compareReplicas(t *testing.T, seed uint64, step int, a, b *Applier) {
	t.Helper()
	if x, y := dumpRange(t, a.pdb, []byte{codec.NSCatalog}), dumpRange(t, b.pdb, []byte{codec.NSCatalog}); !bytes.Equal(x, y) {
		t.Fatalf("seed %d step %d: the catalogs differ", seed, step)
	}
	ids := a.Catalog().DatabaseIDs()
	if !slices.Equal(ids, b.Catalog().DatabaseIDs()) {
		t.Fatalf("seed %d step %d: databases %v and %v", seed, step, ids, b.Catalog().DatabaseIDs())
	}
	for _, id := range ids {
		p := codec.DatabasePrefix(id)
		if x, y := dumpRange(t, a.pdb, p), dumpRange(t, b.pdb, p); !bytes.Equal(x, y) {
			t.Fatalf("seed %d step %d: database %d differs", seed, step, id)
		}
	}
	if x, y := dumpRange(t, a.pdb, nil), dumpRange(t, b.pdb, nil); !bytes.Equal(x, y) {
		t.Fatalf("seed %d step %d: the data directories differ outside the catalog and the databases", seed, step)
	}
}

// logGen makes a random log of commands. It reads the state of the
// replica the log is applied to, so that most commands are valid, and
// picks from small pools of names, so that commands collide: some fail,
// and they fail alike everywhere.
type logGen struct {
	r      *rand.Rand
	now    time.Time
	n      int // a counter for unique ids
	step   int // commands made
	failed int

	users   []string
	wss     []string
	invites map[string][]string // workspace → invite ids
	secrets [][32]byte          // hashes of invite keys handed out
	keys    map[string][]string // user → key names
	// flattening is the command that finishes a flatten begun on database
	// flattenDB, once the copy is made.
	flattening *FinishFlatten
	flattenDB  uint32
	backup     []byte
	// written holds ids of records written, by branch/table, for commands
	// that need a record.
	written map[string][]string
}

// newLogGen returns a generator of the log seed names.
func newLogGen(seed uint64) *logGen {
	return &logGen{
		r:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		now:     time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		invites: map[string][]string{}, keys: map[string][]string{}, written: map[string][]string{},
	}
}

// tick advances the log's clock: commands carry their times.
func (g *logGen) tick() time.Time {
	g.now = g.now.Add(time.Duration(1+g.r.IntN(5000)) * time.Millisecond)
	return g.now
}

// id returns a fresh id with a prefix.
func (g *logGen) id(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%04d", prefix, g.n)
}

// pick returns a random element of xs, or "" when empty.
func pick[T any](g *logGen, xs []T) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	return xs[g.r.IntN(len(xs))]
}

// applied records what a command that applied created.
func (g *logGen) applied(cmd Command, res any) {
	switch c := cmd.Catalog.(type) {
	case *catalog.CreateUser:
		g.users = append(g.users, c.User.ID)
	case *catalog.Bootstrap:
		g.users = append(g.users, c.User.ID)
		g.wss = append(g.wss, c.Workspace.Core)
		g.keys[c.User.ID] = append(g.keys[c.User.ID], c.Key.Name)
	case *catalog.CreateWorkspace:
		g.wss = append(g.wss, c.Workspace.Core)
	case *catalog.CreateAPIKey:
		g.keys[c.Key.UserID] = append(g.keys[c.Key.UserID], c.Key.Name)
	case *catalog.CreateInvite:
		g.invites[c.WS] = append(g.invites[c.WS], c.Invite.ID)
	}
	if _, ok := cmd.DB.(*FinishFlatten); ok {
		g.flattening = nil
	}
	if w, ok := cmd.DB.(*WriteRecords); ok {
		for _, r := range res.([]OpResult) {
			if r.Rec != nil {
				g.written[w.Branch+"/"+r.Tbl.Name] = append(g.written[w.Branch+"/"+r.Tbl.Name], r.ID)
			}
		}
	}
}

// next makes the next command of the log, given the state of a. The
// first commands go through every kind of catalog command twice, in
// order, the second time with accounts to refer to.
func (g *logGen) next(a *Applier) Command {
	if g.step++; g.step <= 2*catalogChoices {
		return OnCatalog(g.catalogCommand(a, (g.step-1)%catalogChoices))
	}
	if g.flattening != nil && g.r.IntN(3) == 0 {
		return OnDatabase(g.flattenDB, g.flattening)
	}
	ids := a.Catalog().DatabaseIDs()
	if len(ids) == 0 || g.r.IntN(10) == 0 {
		return OnCatalog(g.catalogCommand(a, g.r.IntN(catalogChoices)))
	}
	id := pick(g, ids)
	d := a.DB(id)
	if d == nil {
		return OnCatalog(g.catalogCommand(a, g.r.IntN(catalogChoices)))
	}
	return OnDatabase(id, g.dbCommand(d))
}

// roles are the member roles, and one that is not.
var roles = []catalog.Role{catalog.RoleOwner, catalog.RoleMaintainer, "nobody"}

// catalogChoices is the number of choices catalogCommand has.
const catalogChoices = 25

// catalogCommand makes a random catalog command, of a kind choice picks.
func (g *logGen) catalogCommand(a *Applier, choice int) catalog.Command {
	now := g.tick()
	user, ws := pick(g, g.users), pick(g, g.wss)
	if g.r.IntN(8) == 0 {
		user = "usr_missing"
	}
	dbName := fmt.Sprintf("db%d", g.r.IntN(6))
	if g.step <= 2*catalogChoices && (choice == 16 || choice == 17) {
		// In the opening round, a command on a database names one that
		// exists, where there is one, so that every log applies some.
		for _, p := range a.Catalog().Placements() {
			if p.Workspace == "" {
				dbName = p.Name
			}
		}
	}
	switch choice {
	case 0:
		id := g.id("usr_")
		return &catalog.CreateUser{User: catalog.User{ID: id, Email: fmt.Sprintf("u%d@example.com", g.r.IntN(40)), Fullname: id, CreatedAt: now}}
	case 1:
		return &catalog.UpdateUser{ID: user, Email: fmt.Sprintf("u%d@example.com", g.r.IntN(40)), Fullname: g.id("name"), Image: "img"}
	case 2:
		return &catalog.DeleteUser{ID: user}
	case 19:
		return &catalog.SetServerState{Name: fmt.Sprintf("s%d", g.r.IntN(3)), Value: []byte(g.id("v"))}
	case 3:
		name := fmt.Sprintf("key%d", g.r.IntN(4))
		return &catalog.CreateAPIKey{Key: catalog.APIKey{Name: name, UserID: user, Workspace: ws, CreatedAt: now, Hash: sha256.Sum256([]byte(g.id("secret")))}}
	case 4:
		return &catalog.DeleteAPIKey{UserID: user, Name: pick(g, g.keys[user])}
	case 5:
		return &catalog.CreateWorkspace{Workspace: catalog.Workspace{Core: fmt.Sprintf("w%05d", g.r.IntN(50)), Name: g.id("ws"), Slug: "slug", Plan: "free", CreatedAt: now}, Owner: user}
	case 6:
		return &catalog.UpdateWorkspace{Caller: user, WS: ws, Name: g.id("ws"), Slug: pick(g, []string{"", "new-slug"})}
	case 7:
		return &catalog.SetMemberRole{Caller: user, WS: ws, UserID: pick(g, g.users), Role: pick(g, roles)}
	case 20:
		return &catalog.DeleteWorkspace{Caller: user, WS: ws}
	case 8:
		return &catalog.RemoveMember{Caller: user, WS: ws, UserID: pick(g, g.users)}
	case 9:
		h := sha256.Sum256([]byte(g.id("invite")))
		g.secrets = append(g.secrets, h)
		return &catalog.CreateInvite{Caller: user, WS: ws, Invite: catalog.Invite{ID: g.id("inv_"), Workspace: ws,
			Email: fmt.Sprintf("u%d@example.com", g.r.IntN(40)), Role: pick(g, roles[:2]), Expires: now.Add(time.Hour), KeyHash: h, CreatedAt: now}}
	case 10:
		return &catalog.AcceptInvite{Caller: user, WS: ws, KeyHash: pick(g, g.secrets), Now: now}
	case 11:
		return &catalog.UpdateInvite{Caller: user, WS: ws, InviteID: pick(g, g.invites[ws]), Role: pick(g, roles)}
	case 12:
		return &catalog.DeleteInvite{Caller: user, WS: ws, InviteID: pick(g, g.invites[ws])}
	case 13, 14, 15:
		space := ""
		if g.r.IntN(2) == 0 {
			space = ws
		}
		return &catalog.PlaceDatabase{Database: catalog.Database{Workspace: space, Name: dbName, Region: "local", CreatedAt: now},
			First: &catalog.FirstBranch{Name: pick(g, []string{"main", "trunk"}), PublicID: g.id("bb_"), Now: now,
				Metadata: model.BranchMetadata{Stage: "dev"}}}
	case 16:
		color := pick(g, []string{"red", ""})
		return &catalog.UpdateDatabase{WS: "", Name: dbName, NewName: pick(g, []string{"", fmt.Sprintf("db%d", g.r.IntN(6))}), UIColor: &color}
	case 17:
		return &catalog.DropDatabase{WS: "", Name: dbName}
	case 21:
		return g.restore(a, now, dbName)
	case 22:
		return &catalog.SetNode{Node: catalog.Node{ID: uint64(g.r.IntN(4)), RaftAddr: pick(g, []string{"", "n:7000"}), APIAddr: "n:8080"}}
	case 23:
		return &catalog.RemoveNode{ID: uint64(g.r.IntN(4))}
	case 24:
		id := pick(g, a.Catalog().DatabaseIDs())
		p, _ := a.Catalog().PlacementOf(id)
		next := append(slices.Clone(p.Replicas), catalog.Replica{ID: p.NextReplicaID(), Node: uint64(g.r.IntN(4)), Addr: "n:7000", Join: g.r.IntN(2) == 0})
		if len(p.Replicas) > 0 && g.r.IntN(2) == 0 {
			next = slices.Clone(p.Replicas)
			next[0].Removed = true
		}
		if g.r.IntN(5) == 0 {
			p.Replicas = nil // a stale move
		}
		return &catalog.SetReplicas{DB: id, Prev: p.Replicas, Replicas: next}
	}
	uid := g.id("usr_")
	return &catalog.Bootstrap{
		User:      catalog.User{ID: uid, Email: fmt.Sprintf("admin%d@example.com", g.r.IntN(3)), Admin: true, CreatedAt: now},
		Workspace: catalog.Workspace{Core: fmt.Sprintf("w%05d", g.r.IntN(50)), Name: "first", Slug: "first", Plan: "free", CreatedAt: now},
		Key:       catalog.APIKey{Name: "admin", UserID: uid, CreatedAt: now, Hash: sha256.Sum256([]byte(g.id("secret")))},
	}
}

// restore makes a RestoreDatabase of a backup of some database of a, or
// of a malformed backup. In the opening round of every catalog command
// the backup is always a fresh, whole one, so that a log has a restore
// that applies: a catalog command is a tenth of the rest, a restore a
// twenty-fifth of those.
func (g *logGen) restore(a *Applier, now time.Time, name string) catalog.Command {
	cmd := &catalog.RestoreDatabase{Database: catalog.Database{Name: name + "r", Region: "local", CreatedAt: now}}
	opening := g.step <= 2*catalogChoices
	if ids := a.Catalog().DatabaseIDs(); len(ids) > 0 && (opening || g.r.IntN(4) != 0) {
		var buf bytes.Buffer
		snap := a.pdb.NewSnapshot()
		err := layers.WriteRange(snap, pick(g, ids), &buf)
		snap.Close()
		if err == nil {
			g.backup = buf.Bytes()
		}
	}
	cmd.Backup = g.backup
	if !opening && g.r.IntN(5) == 0 {
		cmd.Backup = []byte("coppice-backup-1\nnot really")
	}
	return cmd
}

// branchNames and tableNames are the pools of names commands use.
var (
	branchNames = []string{"main", "trunk", "dev", "feat", "fix", "exp", "old"}
	tableNames  = []string{"people", "pets", "notes"}
)

// columnPool is every column a table may get: every type.
var columnPool = []model.ColumnDef{
	{Name: "name", Type: model.TypeString},
	{Name: "n", Type: model.TypeInt},
	{Name: "f", Type: model.TypeFloat},
	{Name: "when", Type: model.TypeDatetime},
	{Name: "tags", Type: model.TypeMultiple},
	{Name: "bio", Type: model.TypeText},
	{Name: "mail", Type: model.TypeEmail, Unique: true},
	{Name: "ok", Type: model.TypeBool, NotNull: true, DefaultValue: ptr("false")},
	{Name: "doc", Type: model.TypeJSON},
	{Name: "emb", Type: model.TypeVector, Vector: &model.VectorDef{Dimension: 2}},
	{Name: "pic", Type: model.TypeFile},
	{Name: "pics", Type: model.TypeFileArray},
	{Name: "friend", Type: model.TypeLink, Link: &model.LinkDef{Table: "people"}},
	{Name: "addr", Type: model.TypeObject, Columns: []model.ColumnDef{{Name: "city", Type: model.TypeString}}},
}

// dbCommand makes a random command on database d.
func (g *logGen) dbCommand(d *DB) DBCommand {
	now := g.tick()
	st := d.State()
	var names []string
	for name := range st.Branches.All {
		names = append(names, name)
	}
	slices.Sort(names)
	branch := pick(g, names)
	if branch == "" || g.r.IntN(20) == 0 {
		branch = pick(g, branchNames)
	}
	var schema *model.Schema
	if b := st.Branches.At(branch); b != nil {
		schema = b.Schema
	}
	table := pick(g, tableNames)
	if schema != nil && len(schema.Tables) > 0 && g.r.IntN(10) != 0 {
		table = pick(g, schema.Tables).Name
	}
	hdr := SchemaHeader{Branch: branch, ID: g.id("mig_"), Now: now}
	if g.r.IntN(6) == 0 {
		head := g.id("mig_")
		if schema != nil && g.r.IntN(2) == 0 {
			if b := st.Branches.At(branch); b != nil {
				head = b.LastMigrationID
			}
		}
		hdr.Parent = &head
	}
	if schema != nil && len(schema.Tables) < 2 && g.r.IntN(3) != 0 {
		t := pick(g, tableNames)
		if g.r.IntN(2) == 0 {
			return &SchemaOp{SchemaHeader: hdr, Op: model.MigrationOp{AddTable: &model.TableOp{Table: t}}}
		}
		cols := slices.Clone(columnPool[:1+g.r.IntN(len(columnPool))])
		return &Migrate{SchemaHeader: hdr, Ops: []model.MigrationOp{{AddTable: &model.TableOp{Table: t}},
			{AddColumn: &model.AddColumnOp{Table: t, Column: pick(g, cols)}}, {AddColumn: &model.AddColumnOp{Table: t, Column: columnPool[10]}}}}
	}
	if schema != nil && g.r.IntN(3) == 0 {
		if t := schema.TableByName(table); t != nil && len(t.Columns) < 6 {
			return &SchemaOp{SchemaHeader: hdr, Op: model.MigrationOp{AddColumn: &model.AddColumnOp{Table: table, Column: pick(g, columnPool)}}}
		}
	}
	switch n := g.r.IntN(33); {
	case n < 14:
		var t *model.Table
		if schema != nil {
			t = schema.TableByName(table)
		}
		return g.writeRecords(branch, table, t, now)
	case n < 18:
		col := pick(g, []string{"pic", "pics", "name"})
		if schema != nil && schema.TableByName(table) != nil {
			for _, c := range schema.TableByName(table).Columns {
				if model.IsFileType(c.Type) && g.r.IntN(4) != 0 {
					col = c.Name
				}
			}
		}
		rec := g.recordID()
		if ids := g.written[branch+"/"+table]; len(ids) > 0 && g.r.IntN(4) != 0 {
			rec = pick(g, ids)
		}
		return &WriteFile{Branch: branch, Target: model.FileTarget{Table: table, Record: rec, Column: col},
			Put: g.r.IntN(4) != 0, Content: []byte(g.id("content ")), MediaType: pick(g, []string{"text/plain", "image/png"}), Now: now}
	case n < 20:
		md := &model.BranchMetadata{Repository: "repo", Branch: g.id("git"), Stage: "dev"}
		if g.r.IntN(2) == 0 {
			md = nil
		}
		return &CreateBranch{Name: pick(g, branchNames), From: branch, PublicID: g.id("bb_"), Now: now, Metadata: md}
	case n < 21:
		return &DeleteBranch{Name: branch}
	case n < 22:
		if g.r.IntN(2) == 0 {
			return &SetBranchMetadata{Branch: branch, Metadata: model.BranchMetadata{Stage: g.id("stage")}}
		}
		target := branch
		if g.r.IntN(3) == 0 {
			target = ""
		}
		return &SetGitMapping{Git: fmt.Sprintf("git/%d", g.r.IntN(4)), Branch: target}
	case n < 25:
		return &SchemaOp{SchemaHeader: hdr, Op: g.migrationOp(schema, table)}
	case n < 26:
		cols := slices.Clone(columnPool[:1+g.r.IntN(len(columnPool))])
		g.r.Shuffle(len(cols), func(i, j int) { cols[i], cols[j] = cols[j], cols[i] })
		return &SetTableColumns{SchemaHeader: hdr, Table: table, Columns: cols}
	case n < 28:
		ops := []model.MigrationOp{g.migrationOp(schema, table), g.migrationOp(schema, table)}
		cmd := &Migrate{SchemaHeader: hdr, Ops: ops}
		if g.r.IntN(3) == 0 {
			src := g.id("mig_")
			cmd.Source = &src
		}
		return cmd
	case n < 29:
		hdr.Title, hdr.Message = "title", "message"
		return &PushMigration{SchemaHeader: hdr, Ops: []model.MigrationOp{g.migrationOp(schema, table)}}
	case n < 31:
		// Flatten a deep branch, or try a stale or bogus flatten.
		var deep []*model.Branch
		for _, name := range names {
			if b := st.Branches.At(name); len(b.Lineage) > 2 {
				deep = append(deep, b)
			}
		}
		if b := pick(g, deep); b != nil && g.flattening == nil {
			return &StartFlatten{Branch: b.ID, Frozen: slices.Clone(b.Lineage[1:])}
		}
		if g.r.IntN(2) == 0 {
			return &FinishFlatten{Branch: uint32(g.r.IntN(5)), Frozen: model.Lineage{{Layer: 1, Seq: 3}}, Layer: 99}
		}
		return &CreateBranch{Name: g.id("deep"), From: branch, PublicID: g.id("bb_"), Now: now}
	case n < 32:
		// An initialized database refuses a second first branch, and a
		// part of a backup outside a replicated log is refused.
		if g.r.IntN(4) == 0 {
			return &LoadRange{Data: []byte("coppice-backup-1\n"), Last: true}
		}
		return &InitDatabase{Branch: branch, PublicID: g.id("bb_"), Now: now}
	}
	return &WriteRecords{Branch: branch, Now: now, Bulk: true, Ops: []model.Op{
		{Kind: model.OpInsert, Table: table, ID: g.id("bulk"), CreateOnly: true, Values: g.values(nil, 2)},
		{Kind: model.OpInsert, Table: table, ID: g.id("bulk"), CreateOnly: true, Values: g.values(nil, 2)},
	}}
}

// migrationOp makes a random schema edit of table.
func (g *logGen) migrationOp(s *model.Schema, table string) model.MigrationOp {
	col := pick(g, columnPool)
	if s != nil {
		if t := s.TableByName(table); t != nil && len(t.Columns) > 0 && g.r.IntN(2) == 0 {
			col = model.ColumnDef{Name: pick(g, t.Columns).Name}
		}
	}
	switch g.r.IntN(6) {
	case 0:
		return model.MigrationOp{AddTable: &model.TableOp{Table: pick(g, tableNames)}}
	case 1:
		return model.MigrationOp{RemoveTable: &model.TableOp{Table: table}}
	case 2:
		return model.MigrationOp{RenameTable: &model.RenameTableOp{OldName: table, NewName: pick(g, tableNames)}}
	case 3:
		return model.MigrationOp{RemoveColumn: &model.RemoveColumnOp{Table: table, Column: col.Name}}
	case 4:
		return model.MigrationOp{RenameColumn: &model.RenameColumnOp{Table: table, OldName: col.Name, NewName: pick(g, columnPool).Name + "2"}}
	}
	return model.MigrationOp{AddColumn: &model.AddColumnOp{Table: table, Column: col}}
}

// recordID picks from a small pool of record ids, so that writes meet.
func (g *logGen) recordID() string { return fmt.Sprintf("rec%d", g.r.IntN(12)) }

// values makes up to n random column values, mostly of columns of the
// table t (nil: any), some of the wrong type.
func (g *logGen) values(t *model.Table, n int) map[string]any {
	v := map[string]any{}
	for range 1 + g.r.IntN(n) {
		c := pick(g, columnPool)
		if t != nil && len(t.Columns) > 0 && g.r.IntN(10) != 0 {
			c = model.ColumnDef{Name: pick(g, t.Columns).Name}
		}
		switch c.Name {
		case "name":
			v["name"] = pick(g, []any{"ann", "bob", 12})
		case "n":
			if g.r.IntN(3) == 0 {
				v["n"] = map[string]any{"$increment": int64(g.r.IntN(9))}
			} else {
				v["n"] = g.r.Int64N(1<<62) - 1<<61
			}
		case "f":
			v["f"] = g.r.NormFloat64()
		case "when":
			v["when"] = g.now.Add(-time.Duration(g.r.IntN(1e6)) * time.Second).Format(time.RFC3339Nano)
		case "tags":
			v["tags"] = []any{pick(g, []string{"a", "b", "c"}), "z"}
		case "bio":
			v["bio"] = pick(g, []string{"likes long walks", "the quick brown fox", "walks"})
		case "mail":
			v["mail"] = fmt.Sprintf("m%d@example.com", g.r.IntN(10))
		case "ok":
			v["ok"] = g.r.IntN(2) == 0
		case "doc":
			v["doc"] = map[string]any{"k": []any{1.5, "v", nil}}
		case "emb":
			v["emb"] = []any{g.r.Float64(), -g.r.Float64()}
		case "friend":
			v["friend"] = g.recordID()
		case "addr":
			v["addr"] = map[string]any{"city": pick(g, []string{"Oslo", "Rome"})}
		}
	}
	return v
}

// writeRecords makes a transaction of 1 to 4 random operations, or, one
// time in four, a bulk insert of 1 to 8 records.
func (g *logGen) writeRecords(branch, table string, t *model.Table, now time.Time) *WriteRecords {
	cmd := &WriteRecords{Branch: branch, Now: now}
	if g.r.IntN(4) == 0 {
		cmd.Bulk = true
		for range 1 + g.r.IntN(8) {
			cmd.Ops = append(cmd.Ops, model.Op{Kind: model.OpInsert, Table: table, ID: g.recordID(), Values: g.values(t, 4)})
		}
		return cmd
	}
	for range 1 + g.r.IntN(4) {
		op := model.Op{Table: table, ID: g.recordID()}
		if g.r.IntN(10) == 0 {
			op.Table = pick(g, tableNames)
		}
		switch g.r.IntN(7) {
		case 0, 1, 2:
			op.Kind, op.Values, op.CreateOnly = model.OpInsert, g.values(t, 4), g.r.IntN(3) == 0
		case 3, 4:
			op.Kind, op.Values, op.Upsert = model.OpUpdate, g.values(t, 3), g.r.IntN(2) == 0
			if g.r.IntN(4) == 0 {
				v := uint64(g.r.IntN(3))
				op.IfVersion = &v
			}
		case 5:
			op.Kind, op.FailIfMissing = model.OpDelete, g.r.IntN(3) == 0
		default:
			op.Kind = model.OpGet
		}
		cmd.Ops = append(cmd.Ops, op)
	}
	return cmd
}
