package transfer

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine"
)

// branchesOf lists the branches of a database by name.
func branchesOf(t *testing.T, e *engine.Engine, ws, db string) []string {
	t.Helper()
	list, err := e.Branches().List(ws, db)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range list {
		names = append(names, b.Name)
	}
	return names
}

// dumpBytes dumps with o and returns the dump.
func dumpBytes(t *testing.T, o DumpOptions) ([]byte, *DumpSummary) {
	t.Helper()
	var out bytes.Buffer
	o.Out = &out
	sum, err := Dump(t.Context(), o)
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	if sum.Bytes != int64(out.Len()) {
		t.Errorf("summary counts %d bytes, wrote %d", sum.Bytes, out.Len())
	}
	return out.Bytes(), sum
}

// body is a dump without its header line, which holds the time.
func body(dump []byte) []byte {
	_, b, _ := bytes.Cut(dump, []byte("\n"))
	return b
}

// TestDumpLoadRoundTrip dumps a database with a lineage of branches over
// HTTP, loads it under another name on the same server and into a data
// directory, and dumps both copies to the same bytes; --branch keeps a
// branch and the branches it was forked from only.
func TestDumpLoadRoundTrip(t *testing.T) {
	ts := startServer(t, t.TempDir(), false)
	ts.createTable("people", peopleColumns)
	importText(t, ImportOptions{Target: ts.target("people"), InputName: "people.csv"}, peopleCSV)
	ref := func(b string) engine.Ref { return engine.Ref{Workspace: ts.core, Database: "app", Branch: b} }
	write := func(b, id, name string) {
		t.Helper()
		if _, err := ts.eng.WriteOne(ref(b), engine.Op{Kind: engine.OpUpdate, Upsert: true, Table: "people", ID: id, Values: map[string]any{"name": name}}); err != nil {
			t.Fatal(err)
		}
	}
	// main → dev → feature, and main → other; each writes after its fork.
	for _, f := range [][2]string{{"dev", "main"}, {"feature", "dev"}, {"other", "main"}} {
		if err := ts.eng.Branches().Create(ref(f[0]), engine.CreateBranchRequest{From: f[1]}); err != nil {
			t.Fatal(err)
		}
		write(f[0], "only-"+f[0], f[0])
	}
	write("main", "p1", "changed on main after every fork")
	if _, err := ts.eng.Branches().SetGitMapping(ts.core, "app", "feature-x", "feature"); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.eng.Branches().SetGitMapping(ts.core, "app", "other-x", "other"); err != nil {
		t.Fatal(err)
	}
	server := Target{URL: ts.url, APIKey: testKey, Workspace: ts.ws, Database: "app"}

	dump, sum := dumpBytes(t, DumpOptions{Target: server})
	h, err := codec.DecodeDumpHeader(bytes.SplitN(dump, []byte("\n"), 2)[0])
	if err != nil || h.Database != "app" || h.Region != "local" || sum.Database != "app" {
		t.Fatalf("header %+v %v, summary %+v", h, err, sum)
	}
	// On the same server under another name; the plain URL finds the
	// key's only workspace.
	ls, err := Load(t.Context(), LoadOptions{Target: Target{URL: ts.url, APIKey: testKey, Database: "copy"}, In: bytes.NewReader(dump), InSize: int64(len(dump))})
	if err != nil {
		t.Fatal(err)
	}
	if ls.Database != "copy" || ls.Region != "local" || ls.Bytes != int64(len(dump)) {
		t.Errorf("load summary %+v", ls)
	}
	if _, err := Load(t.Context(), LoadOptions{Target: server, In: bytes.NewReader(dump), InSize: -1}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("load over an existing database: %v", err)
	}
	copyDump, _ := dumpBytes(t, DumpOptions{Target: Target{URL: ts.url, APIKey: testKey, Workspace: ts.ws, Database: "copy"}})
	if !bytes.Equal(body(copyDump), body(dump)) {
		t.Error("the copy on the server dumps to other bytes")
	}

	// --branch feature: feature, dev and main; other and its mapping go.
	pruned, ps := dumpBytes(t, DumpOptions{Target: server, Branch: "feature"})
	if !reflect.DeepEqual(ps.Branches, []string{"feature", "dev", "main"}) {
		t.Errorf("kept %v", ps.Branches)
	}
	if bytes.Contains(pruned, []byte("only-other")) || !bytes.Contains(pruned, []byte("only-feature")) {
		t.Error("the pruned dump holds the other branch's record, or lacks feature's")
	}
	if _, err := Dump(t.Context(), DumpOptions{Target: server, Branch: "nope", Out: &bytes.Buffer{}}); err == nil ||
		!strings.Contains(err.Error(), "branch [nope] is not in the dump") {
		t.Errorf("--branch of a missing branch: %v", err)
	}
	mainOnly, ms := dumpBytes(t, DumpOptions{Target: server, Branch: "main"})
	if !reflect.DeepEqual(ms.Branches, []string{"main"}) || bytes.Contains(mainOnly, []byte("only-dev")) {
		t.Errorf("--branch main kept %v", ms.Branches)
	}

	// Another place: a data directory no server holds.
	other := startServer(t, t.TempDir(), false)
	other.stop()
	dd := Target{DataDir: other.dir, Workspace: other.ws}
	for name, d := range map[string][]byte{"full": dump, "feature": pruned} {
		tgt := dd
		tgt.Database = name
		if _, err := Load(t.Context(), LoadOptions{Target: tgt, In: bytes.NewReader(d), InSize: -1}); err != nil {
			t.Fatal(err)
		}
	}
	dd.Database = "full"
	fromDir, _ := dumpBytes(t, DumpOptions{Target: dd})
	if !bytes.Equal(body(fromDir), body(dump)) {
		t.Error("the copy in a data directory dumps to other bytes")
	}
	e := openRestored(t, other.dir)
	if got := branchesOf(t, e, other.core, "feature"); !reflect.DeepEqual(got, []string{"main", "dev", "feature"}) {
		t.Errorf("branches of the pruned copy: %v", got)
	}
	if got, _ := e.Branches().GitMappings(other.core, "feature"); len(got) != 1 || got[0].GitBranch != "feature-x" {
		t.Errorf("git mapping of the pruned copy: %+v", got)
	}
	for _, c := range []struct {
		db, branch, id, name string
	}{
		{"feature", "feature", "only-feature", "feature"}, {"feature", "feature", "only-dev", "dev"},
		{"feature", "main", "p1", "changed on main after every fork"}, {"full", "other", "only-other", "other"},
	} {
		r, err := e.Get(engine.Ref{Workspace: other.core, Database: c.db, Branch: c.branch}, "people", c.id)
		if err != nil || r.Values["name"] != c.name {
			t.Errorf("%s:%s/%s: %v %v", c.db, c.branch, c.id, r, err)
		}
	}
	if _, err := e.Get(engine.Ref{Workspace: other.core, Database: "feature", Branch: "feature"}, "people", "p1"); err != nil {
		t.Errorf("feature sees p1 as before main changed it: %v", err)
	}
}

// TestDumpCutShort: a dump stream that ends early or arrives damaged is an
// error; so is a file that is no dump.
func TestDumpCutShort(t *testing.T) {
	ts := startServer(t, t.TempDir(), false)
	ts.createTable("people", peopleColumns)
	importText(t, ImportOptions{Target: ts.target("people"), InputName: "people.csv"}, peopleCSV)
	dump, _ := dumpBytes(t, DumpOptions{Target: Target{URL: ts.url, APIKey: testKey, Workspace: ts.ws, Database: "app"}})
	f := func(name string, served []byte, want string) {
		t.Helper()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(served) }))
		defer srv.Close()
		_, err := Dump(t.Context(), DumpOptions{Target: Target{URL: srv.URL, Database: "app"}, Out: &bytes.Buffer{}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	f("cut short", dump[:len(dump)-3], "the dump is incomplete or corrupt")
	damaged := bytes.Clone(dump)
	damaged[len(damaged)-20] ^= 1
	f("damaged", damaged, "checksum")
	f("not a dump", []byte("<html>hello</html>\n"), "not a Coppice dump")
	if _, err := Load(t.Context(), LoadOptions{Target: Target{URL: ts.url, APIKey: testKey}, In: strings.NewReader("a,b\n1,2\n"), InSize: -1}); err == nil ||
		!strings.Contains(err.Error(), "not a Coppice dump") {
		t.Errorf("load of a CSV: %v", err)
	}
}
