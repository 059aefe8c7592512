package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/png"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// fileFixture is recFixture with a table "docs" of a file column "photo",
// a public-by-default file[] column "att" and a string "title", on a clock
// the test moves.
func fileFixture(t *testing.T) (*Engine, Ref, *atomic.Int64) {
	t.Helper()
	e, ref := recFixture(t, map[string][]ColumnDef{"docs": {
		{Name: "title", Type: TypeString},
		{Name: "photo", Type: TypeFile},
		{Name: "att", Type: TypeFileArray, FileArray: &FileDef{DefaultPublicAccess: boolp(true)}},
	}})
	now := &atomic.Int64{}
	now.Store(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC).UnixNano())
	e.opts.Clock = func() time.Time { return time.Unix(0, now.Load()).UTC() }
	return e, ref, now
}

func boolp(b bool) *bool { return &b }

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// pngBytes is a w×h PNG image.
func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// contentKeys counts the file content keys of a database.
func contentKeys(t *testing.T, e *Engine, ref Ref) int {
	t.Helper()
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		t.Fatal(err)
	}
	p := codec.DatabasePrefix(d.ID)
	it, err := e.pdb.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.SeekGE(p); ok && bytes.HasPrefix(it.Key(), p); ok = it.Next() {
		if k, err := codec.ParseDataKey(it.Key()); err == nil && k.Kind == codec.KindFileChunk {
			n++
		}
	}
	return n
}

// fileContent reads a file through the binary API.
func fileContent(t *testing.T, e *Engine, ref Ref, id, col, fileID string) string {
	t.Helper()
	tg := FileTarget{Table: "docs", Record: id, Column: col, Item: col == "att", FileID: fileID}
	f, data, err := e.Files().Get(ref, tg)
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", id, col, fileID, err)
	}
	if f == nil {
		return "<none>"
	}
	return string(data)
}

func TestFileValues(t *testing.T) {
	e, ref, _ := fileFixture(t)
	img := pngBytes(t, 3, 2)
	res, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", ID: "d1", Values: map[string]any{
		"photo": map[string]any{"name": "p.png", "mediaType": "image/png", "base64Content": base64.StdEncoding.EncodeToString(img)},
		"att":   []any{map[string]any{"name": "a.txt", "base64Content": b64("alpha")}, map[string]any{"name": "empty", "base64Content": ""}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	photo := res.Record.Values["photo"].(File)
	if photo.ID != "" || photo.Name != "p.png" || photo.MediaType != "image/png" || photo.Size != int64(len(img)) ||
		photo.Version != 1 || !photo.Image || photo.Width != 3 || photo.Height != 2 || photo.EnablePublicURL ||
		photo.SignedURLTimeout != 60 || photo.UploadURLTimeout != 86400 {
		t.Errorf("photo %+v", photo)
	}
	att := res.Record.Values["att"].([]File)
	genID := regexp.MustCompile(`^[a-z0-9]{26}$`)
	if len(att) != 2 || !genID.MatchString(att[0].ID) || att[0].ID == att[1].ID || att[0].MediaType != "application/octet-stream" ||
		!att[0].EnablePublicURL || att[0].Size != 5 || att[0].Image || att[1].Size != 0 {
		t.Fatalf("att %+v", att)
	}
	if got := fileContent(t, e, ref, "d1", "photo", ""); got != string(img) {
		t.Errorf("photo content %q", got)
	}
	if got := fileContent(t, e, ref, "d1", "att", att[0].ID); got != "alpha" {
		t.Errorf("att content %q", got)
	}
	if got := fileContent(t, e, ref, "d1", "att", att[1].ID); got != "" {
		t.Errorf("empty file content %q", got)
	}
	// Chunks: one for the image, one for "alpha", none for the empty file.
	if n := contentKeys(t, e, ref); n != 2 {
		t.Errorf("%d content keys, want 2", n)
	}

	// Projections: content and URLs only when named; sub-fields alone.
	get := func(cols string) map[string]any {
		t.Helper()
		rec, err := e.Get(ref, "docs", "d1")
		if err != nil {
			t.Fatal(err)
		}
		docs, err := e.Project(ref, "docs", []*Record{rec}, mustColumns(cols))
		if err != nil {
			t.Fatalf("project %s: %v", cols, err)
		}
		return docs[0].Values
	}
	v := get(`["*"]`)
	if f := v["photo"].(File); f.AccessID == "" || f.Base64Content != nil || f.SignedVerify != "" || f.Fields != nil {
		t.Errorf("* photo %+v", f)
	}
	v = get(`["*","photo.base64Content","att.uploadUrl"]`)
	if f := v["photo"].(File); f.Base64Content == nil || *f.Base64Content != base64.StdEncoding.EncodeToString(img) || f.Fields != nil {
		t.Errorf("photo.base64Content %+v", f)
	}
	if l := v["att"].([]File); l[0].UploadVerify == "" || l[0].SignedVerify != "" {
		t.Errorf("att.uploadUrl %+v", l)
	}
	v = get(`["photo.name","photo.signedUrl"]`)
	if f := v["photo"].(File); !f.Fields["name"] || f.Fields["size"] || f.SignedVerify == "" || v["att"] != nil {
		t.Errorf("photo.name %+v, %v", f, v)
	}
	if _, err := e.Project(ref, "docs", nil, mustColumns(`["title.base64Content"]`)); CodeOf(err) != CodeInvalid {
		t.Errorf("a sub-field of a string column: %v", err)
	}
	if _, err := e.Project(ref, "docs", nil, mustColumns(`["photo.nope"]`)); CodeOf(err) != CodeInvalid {
		t.Errorf("an unknown file field: %v", err)
	}

	// file[] replaces the column: a known id without content keeps it and
	// takes new metadata, unlisted items go (with their content), items
	// without id are new.
	res, err = e.WriteOne(ref, Op{Kind: OpUpdate, Table: "docs", ID: "d1", Values: map[string]any{
		"att": []any{
			map[string]any{"id": att[0].ID, "name": "renamed.txt", "mediaType": "text/plain", "enablePublicUrl": false},
			map[string]any{"name": "new.bin", "base64Content": b64("beta"), "signedUrlTimeout": 5},
			map[string]any{"id": "mine", "name": "chosen"},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	att2 := res.Record.Values["att"].([]File)
	if len(att2) != 3 || att2[0].ID != att[0].ID || att2[0].Name != "renamed.txt" || att2[0].MediaType != "text/plain" ||
		att2[0].EnablePublicURL || att2[0].Size != 5 || att2[0].Version != 1 ||
		att2[1].ID == att[1].ID || att2[1].SignedURLTimeout != 5 || att2[1].Size != 4 || att2[2].ID != "mine" || att2[2].Size != 0 {
		t.Fatalf("att after update %+v", att2)
	}
	if got := fileContent(t, e, ref, "d1", "att", att[0].ID); got != "alpha" {
		t.Errorf("kept content %q", got)
	}
	if _, _, err := e.Files().Get(ref, FileTarget{Table: "docs", Record: "d1", Column: "att", Item: true, FileID: att[1].ID}); CodeOf(err) != CodeNotFound {
		t.Errorf("removed item: %v", err)
	}
	// New content for a known id: a new version; the old bytes go.
	res, err = e.WriteOne(ref, Op{Kind: OpUpdate, Table: "docs", ID: "d1", Values: map[string]any{
		"att": []any{map[string]any{"id": att[0].ID, "name": "renamed.txt", "base64Content": b64("gamma")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Record.Values["att"].([]File)[0]; f.Version != 2 || f.Size != 5 || f.MediaType != "text/plain" {
		t.Errorf("new content %+v", f)
	}
	if got := fileContent(t, e, ref, "d1", "att", att[0].ID); got != "gamma" {
		t.Errorf("replaced content %q", got)
	}
	if n := contentKeys(t, e, ref); n != 2 {
		t.Errorf("%d content keys after replacing, want 2 (photo, gamma)", n)
	}
	// A file column written without content keeps its content.
	res, err = e.WriteOne(ref, Op{Kind: OpUpdate, Table: "docs", ID: "d1", Values: map[string]any{
		"photo": map[string]any{"name": "q.png", "enablePublicUrl": true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Record.Values["photo"].(File); f.Name != "q.png" || !f.EnablePublicURL || f.Size != int64(len(img)) || f.Version != 1 {
		t.Errorf("photo metadata update %+v", f)
	}
	// An empty file[] clears the column; deleting the record drops the rest.
	if _, err := e.WriteOne(ref, Op{Kind: OpUpdate, Table: "docs", ID: "d1", Values: map[string]any{"att": []any{}}}); err != nil {
		t.Fatal(err)
	}
	if n := contentKeys(t, e, ref); n != 1 {
		t.Errorf("%d content keys after clearing att, want 1", n)
	}
	if _, err := e.WriteOne(ref, Op{Kind: OpDelete, Table: "docs", ID: "d1"}); err != nil {
		t.Fatal(err)
	}
	if n := contentKeys(t, e, ref); n != 0 {
		t.Errorf("%d content keys after delete, want 0", n)
	}
}

func TestFileValidation(t *testing.T) {
	e, ref, _ := fileFixture(t)
	f := func(values map[string]any, want string) {
		t.Helper()
		_, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", Values: values})
		mustCode(t, err, CodeInvalid, want)
	}
	long := strings.Repeat("a", 1025)
	f(map[string]any{"photo": "x"}, "expected a file object")
	f(map[string]any{"photo": map[string]any{}}, "needs a name")
	f(map[string]any{"photo": map[string]any{"name": "a b"}}, "invalid file name")
	f(map[string]any{"photo": map[string]any{"name": long}}, "invalid file name")
	f(map[string]any{"photo": map[string]any{"name": "a", "mediaType": "text"}}, "invalid mediaType")
	f(map[string]any{"photo": map[string]any{"name": "a", "mediaType": "a/" + strings.Repeat("b", 254)}}, "invalid mediaType")
	f(map[string]any{"photo": map[string]any{"name": "a", "base64Content": "!!"}}, "not valid base64")
	f(map[string]any{"photo": map[string]any{"name": "a", "base64Content": strings.Repeat("A", model.MaxFileBase64+4)}}, "longer than")
	f(map[string]any{"photo": map[string]any{"name": "a", "signedUrlTimeout": 86401}}, "signedUrlTimeout")
	f(map[string]any{"photo": map[string]any{"name": "a", "uploadUrlTimeout": -1}}, "uploadUrlTimeout")
	f(map[string]any{"photo": map[string]any{"name": "a", "signedUrlTimeout": 1.5}}, "integer")
	f(map[string]any{"photo": map[string]any{"name": "a", "enablePublicUrl": "yes"}}, "enablePublicUrl")
	f(map[string]any{"photo": map[string]any{"name": "a", "color": "red"}}, "unknown file field [color]")
	f(map[string]any{"att": map[string]any{"name": "a"}}, "expected an array")
	f(map[string]any{"att": []any{"a"}}, "file entry [0]")
	f(map[string]any{"att": []any{map[string]any{"name": "a", "id": "x"}, map[string]any{"name": "b", "id": "x"}}}, "given twice")
	f(map[string]any{"att": []any{map[string]any{"name": "a", "id": "no/slash"}}}, "invalid file id")
	many := make([]any, 51)
	for i := range many {
		many[i] = map[string]any{"name": "a"}
	}
	f(map[string]any{"att": many}, "at most 50")
	// Output keys echoed back are ignored; the limit itself is accepted.
	if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", Values: map[string]any{
		"photo": map[string]any{"name": "ok", "url": "http://x", "size": 3, "signedUrlTimeout": 86400, "uploadUrlTimeout": 0},
		"att":   many[:50],
	}}); err != nil {
		t.Fatal(err)
	}

	// Bulk inserts and transactions carry no files.
	_, err := e.BulkInsert(context.Background(), ref, "docs", []map[string]any{
		{"title": "fine"}, {"photo": map[string]any{"name": "a"}}, {"att": []any{map[string]any{"name": "a"}}}, {"att": []any{}},
	})
	oe, ok := err.(*OpErrors)
	if !ok || len(oe.Errors) != 2 || oe.Errors[0].Index != 1 || oe.Errors[1].Index != 2 ||
		oe.Errors[0].Err.Message != "column [photo]: file upload not permitted in transaction" ||
		oe.Errors[1].Err.Message != "column [att]: file entry [0]: file upload not permitted in transaction" {
		t.Fatalf("bulk: %#v", err)
	}
	_, err = e.Write(context.Background(), ref, []Op{{Kind: OpInsert, Table: "docs", Values: map[string]any{"title": "x"}},
		{Kind: OpUpdate, Table: "docs", ID: "t1", Upsert: true, Values: map[string]any{"photo": map[string]any{"name": "a"}}}})
	if oe, ok := err.(*OpErrors); !ok || oe.Errors[0].Index != 1 || oe.Errors[0].Err.Message != "column [photo]: file upload not permitted in transaction" {
		t.Fatalf("transaction: %#v", err)
	}
}

func TestFileBinaryWrites(t *testing.T) {
	e, ref, _ := fileFixture(t)
	if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", ID: "d1", Values: map[string]any{"title": "x"}}); err != nil {
		t.Fatal(err)
	}
	version := func() uint64 {
		rec, err := e.Get(ref, "docs", "d1")
		if err != nil {
			t.Fatal(err)
		}
		return rec.Version
	}
	photo := FileTarget{Table: "docs", Record: "d1", Column: "photo"}
	if f, _, err := e.Files().Get(ref, photo); f != nil || err != nil {
		t.Fatalf("empty column: %v %v", f, err)
	}
	f, created, err := e.Files().Put(ref, photo, "text/plain; charset=utf-8", []byte("one"))
	if err != nil || !created || f.Name != "" || f.MediaType != "text/plain" || f.Size != 3 || f.Version != 1 || f.SignedVerify == "" || f.UploadVerify == "" {
		t.Fatalf("put new: %+v %v %v", f, created, err)
	}
	f, created, err = e.Files().Put(ref, FileTarget{Table: "docs", Record: "d1", Column: "photo", Item: true}, "", []byte("two!"))
	if err != nil || created || f.MediaType != "text/plain" || f.Size != 4 || f.Version != 2 {
		t.Fatalf("put again via file/: %+v %v %v", f, created, err)
	}
	if v := version(); v != 2 {
		t.Errorf("record version %d after two binary writes", v)
	}
	item := func(id string) FileTarget {
		return FileTarget{Table: "docs", Record: "d1", Column: "att", Item: true, FileID: id}
	}
	f, created, err = e.Files().Put(ref, item(""), "", []byte("appended"))
	if err != nil || !created || len(f.ID) != 26 || f.MediaType != "application/octet-stream" || !f.EnablePublicURL {
		t.Fatalf("append: %+v %v %v", f, created, err)
	}
	appended := f.ID
	if _, created, err = e.Files().Put(ref, item("x1"), "image/png", pngBytes(t, 4, 4)); err != nil || !created {
		t.Fatalf("create under an id: %v %v", created, err)
	}
	if f, created, err = e.Files().Put(ref, item("x1"), "", []byte("plain")); err != nil || created || f.Version != 2 || f.Image || f.MediaType != "image/png" {
		t.Fatalf("replace x1: %+v %v %v", f, created, err)
	}
	if got := fileContent(t, e, ref, "d1", "att", appended); got != "appended" {
		t.Errorf("appended %q", got)
	}

	// Routes per column kind, and what is missing.
	mustCode2 := func(err error, code Code) {
		t.Helper()
		if CodeOf(err) != code {
			t.Errorf("error %v, want code %d", err, code)
		}
	}
	_, _, err = e.Files().Get(ref, FileTarget{Table: "docs", Record: "d1", Column: "att"})
	mustCode2(err, CodeInvalid)
	_, _, err = e.Files().Get(ref, item(""))
	mustCode2(err, CodeInvalid)
	_, _, err = e.Files().Put(ref, FileTarget{Table: "docs", Record: "d1", Column: "att"}, "", nil)
	mustCode2(err, CodeInvalid)
	_, _, err = e.Files().Get(ref, FileTarget{Table: "docs", Record: "d1", Column: "photo", Item: true, FileID: "x"})
	mustCode2(err, CodeInvalid)
	_, _, err = e.Files().Get(ref, FileTarget{Table: "docs", Record: "d1", Column: "title"})
	mustCode2(err, CodeInvalid)
	_, _, err = e.Files().Get(ref, FileTarget{Table: "docs", Record: "d1", Column: "nope"})
	mustCode2(err, CodeNotFound)
	_, _, err = e.Files().Get(ref, FileTarget{Table: "docs", Record: "nope", Column: "photo"})
	mustCode2(err, CodeNotFound)
	_, _, err = e.Files().Put(ref, FileTarget{Table: "docs", Record: "nope", Column: "photo"}, "", nil)
	mustCode2(err, CodeNotFound)
	_, _, err = e.Files().Put(ref, photo, "not a type", nil)
	mustCode2(err, CodeInvalid)
	_, _, err = e.Files().Put(ref, photo, "", make([]byte, MaxFileBytes+1))
	mustCode2(err, CodeInvalid)

	// Deletes.
	before := version()
	f, err = e.Files().Delete(ref, photo)
	if err != nil || f.Size != 4 {
		t.Fatalf("delete photo: %+v %v", f, err)
	}
	_, err = e.Files().Delete(ref, photo)
	mustCode2(err, CodeNotFound)
	if f, _, err := e.Files().Get(ref, photo); f != nil || err != nil {
		t.Errorf("deleted photo: %v %v", f, err)
	}
	if _, err := e.Files().Delete(ref, item(appended)); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.Files().Get(ref, item(appended))
	mustCode2(err, CodeNotFound)
	_, err = e.Files().Delete(ref, item(""))
	mustCode2(err, CodeInvalid)
	if v := version(); v != before+2 {
		t.Errorf("version %d after two deletes from %d", v, before)
	}
	if n := contentKeys(t, e, ref); n != 1 {
		t.Errorf("%d content keys, want 1 (x1)", n)
	}
	rec, _ := e.Get(ref, "docs", "d1")
	if _, ok := rec.Values["photo"]; ok || len(rec.Values["att"].([]File)) != 1 {
		t.Errorf("record after deletes %v", rec.Values)
	}
}

func TestFileBranches(t *testing.T) {
	e, ref, _ := fileFixture(t)
	put := func(ref Ref, content string) {
		t.Helper()
		if _, _, err := e.Files().Put(ref, FileTarget{Table: "docs", Record: "d1", Column: "photo"}, "", []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", ID: "d1", Values: map[string]any{
		"photo": map[string]any{"name": "p", "base64Content": b64("main-1")},
		"att":   []any{map[string]any{"id": "a", "name": "a", "base64Content": b64("att-1")}},
	}}); err != nil {
		t.Fatal(err)
	}
	dev := Ref{Workspace: ref.Workspace, Database: ref.Database, Branch: "dev"}
	if err := e.Branches().Create(dev, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	if got := fileContent(t, e, dev, "d1", "photo", ""); got != "main-1" {
		t.Fatalf("fork reads %q", got)
	}
	// A change on the fork leaves main alone, and the other way round.
	put(dev, "dev-2")
	put(ref, "main-2")
	if got := fileContent(t, e, dev, "d1", "photo", ""); got != "dev-2" {
		t.Errorf("dev reads %q", got)
	}
	if got := fileContent(t, e, ref, "d1", "photo", ""); got != "main-2" {
		t.Errorf("main reads %q", got)
	}
	// Removing the item on main keeps it on the fork.
	if _, err := e.WriteOne(ref, Op{Kind: OpUpdate, Table: "docs", ID: "d1", Values: map[string]any{"att": nil}}); err != nil {
		t.Fatal(err)
	}
	if got := fileContent(t, e, dev, "d1", "att", "a"); got != "att-1" {
		t.Errorf("dev att %q", got)
	}
	// A fork of the fork, then flattening: the bytes follow the records.
	sub := Ref{Workspace: ref.Workspace, Database: ref.Database, Branch: "sub"}
	if err := e.Branches().Create(sub, CreateBranchRequest{From: "dev"}); err != nil {
		t.Fatal(err)
	}
	put(dev, "dev-3")
	d, _ := e.database(ref.Workspace, ref.Database)
	sb, _ := d.State().Branch("sub")
	if len(sb.Lineage) != 3 {
		t.Fatalf("sub lineage %v", sb.Lineage)
	}
	if err := e.ap.Flatten(d.DB, sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.Branches().Delete(dev); err != nil {
		t.Fatal(err)
	}
	if got := fileContent(t, e, sub, "d1", "photo", ""); got != "dev-2" {
		t.Errorf("sub after flatten reads %q", got)
	}
	if got := fileContent(t, e, sub, "d1", "att", "a"); got != "att-1" {
		t.Errorf("sub att after flatten %q", got)
	}
	if got := fileContent(t, e, ref, "d1", "photo", ""); got != "main-2" {
		t.Errorf("main at the end reads %q", got)
	}
}

func TestFileAccess(t *testing.T) {
	e, ref, now := fileFixture(t)
	res, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", ID: "d1", Values: map[string]any{
		"photo": map[string]any{"name": "p", "base64Content": b64("private"), "signedUrlTimeout": 30},
		"att":   []any{map[string]any{"id": "a", "name": "a", "base64Content": b64("public")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.Get(ref, "docs", "d1")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := e.Project(ref, "docs", []*Record{rec}, mustColumns(`["*","photo.signedUrl","photo.uploadUrl","att.signedUrl"]`))
	if err != nil {
		t.Fatal(err)
	}
	photo := docs[0].Values["photo"].(File)
	att := docs[0].Values["att"].([]File)[0]
	_ = res

	read := func(access, verify string) (string, error) {
		_, data, err := e.Files().ReadByAccess(access, verify)
		return string(data), err
	}
	if got, err := read(att.AccessID, ""); err != nil || got != "public" {
		t.Errorf("public file: %q %v", got, err)
	}
	if _, err := read(photo.AccessID, ""); CodeOf(err) != CodeForbidden {
		t.Errorf("private file without signature: %v", err)
	}
	if got, err := read(photo.AccessID, photo.SignedVerify); err != nil || got != "private" {
		t.Errorf("signed: %q %v", got, err)
	}
	// Forged or misused signatures.
	sig, _ := base64.RawURLEncoding.DecodeString(photo.SignedVerify)
	sig[len(sig)-1] ^= 1
	if _, err := read(photo.AccessID, base64.RawURLEncoding.EncodeToString(sig)); CodeOf(err) != CodeForbidden {
		t.Errorf("forged signature: %v", err)
	}
	if _, err := read(photo.AccessID, photo.UploadVerify); CodeOf(err) != CodeForbidden {
		t.Errorf("upload signature used to read: %v", err)
	}
	if _, err := read(photo.AccessID, att.SignedVerify); CodeOf(err) != CodeForbidden {
		t.Errorf("another file's signature: %v", err)
	}
	if _, err := read("garbage", ""); CodeOf(err) != CodeNotFound {
		t.Errorf("bad access id: %v", err)
	}
	// Upload URLs write; the old read URL names an old version.
	f, err := e.Files().UploadByAccess(photo.AccessID, photo.UploadVerify, "text/plain", []byte("uploaded"))
	if err != nil || f.Size != 8 || f.Version != 2 || f.MediaType != "text/plain" || f.AccessID == photo.AccessID {
		t.Fatalf("upload: %+v %v", f, err)
	}
	if _, err := read(photo.AccessID, photo.SignedVerify); CodeOf(err) != CodeNotFound {
		t.Errorf("old version: %v", err)
	}
	if got, err := read(f.AccessID, f.SignedVerify); err != nil || got != "uploaded" {
		t.Errorf("new version: %q %v", got, err)
	}
	if _, err := e.Files().UploadByAccess(photo.AccessID, photo.SignedVerify, "", nil); CodeOf(err) != CodeForbidden {
		t.Errorf("read signature used to upload: %v", err)
	}
	// Expiry: 30 s for this file's signed URLs.
	now.Add(int64(31 * time.Second))
	if _, err := read(f.AccessID, f.SignedVerify); CodeOf(err) != CodeForbidden {
		t.Errorf("expired signature: %v", err)
	}
	if _, err := e.Files().UploadByAccess(f.AccessID, f.UploadVerify, "", []byte("again")); err != nil {
		t.Errorf("upload URL within its day: %v", err)
	}
}
