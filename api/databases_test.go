package api

import (
	"testing"
)

func TestDatabases(t *testing.T) {
	ts := startServer(t, Options{})
	ws := ts.url + "/workspaces/" + ts.info.WorkspaceID

	jsonEq(t, "regions", ts.expect(200, "GET", ws+"/regions", nil).body, `{"regions":[{"id":"local","name":"Local"}]}`)

	r := ts.expect(201, "PUT", ws+"/dbs/shop", map[string]any{"region": "local", "ui": map[string]any{"color": "red"}})
	jsonEq(t, "create", r.body, `{"databaseName":"shop","branchName":"main","status":"completed"}`)
	r = ts.expect(201, "PUT", ws+"/dbs/blog", map[string]any{"region": "local", "branchName": "trunk",
		"metadata": map[string]any{"repository": "github.com/a/b"}})
	jsonEq(t, "create with branch", r.body, `{"databaseName":"blog","branchName":"trunk","status":"completed"}`)

	f := func(status int, method, path string, body any) {
		t.Helper()
		ts.expect(status, method, ws+path, body)
	}
	f(422, "PUT", "/dbs/shop", map[string]any{"region": "local"})
	f(400, "PUT", "/dbs/bad%20name", map[string]any{"region": "local"})
	f(400, "PUT", "/dbs/x", map[string]any{})
	f(400, "PUT", "/dbs/x", map[string]any{"region": "mars-1"})
	f(400, "PUT", "/dbs/x", `{"region":`)
	f(400, "PUT", "/dbs/x", map[string]any{"region": "local", "bogus": 1})
	f(400, "PUT", "/dbs/x", map[string]any{"region": 7})
	f(400, "PUT", "/dbs/x", map[string]any{"region": "local", "metadata": map[string]any{"repository": ""}})
	f(404, "GET", "/dbs/x", nil)

	r = ts.expect(200, "GET", ws+"/dbs/shop", nil)
	if keys(r.body) != "createdAt,name,region,ui" || r.obj()["name"] != "shop" || r.obj()["region"] != "local" {
		t.Errorf("get: %s", r.raw)
	}
	jsonEq(t, "ui", r.obj()["ui"], `{"color":"red"}`)
	r = ts.expect(200, "GET", ws+"/dbs", nil)
	list := r.obj()["databases"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["name"] != "blog" {
		t.Errorf("list: %s", r.raw)
	}
	if r := ts.expect(200, "GET", "/dbs/blog", nil); r.obj()["branches"].([]any)[0].(map[string]any)["name"] != "trunk" {
		t.Errorf("first branch: %s", r.raw)
	}

	// Update metadata: {} is 400, an unknown database 404 (400 in compat
	// mode, below).
	f(400, "PATCH", "/dbs/shop", map[string]any{})
	f(404, "PATCH", "/dbs/nope", map[string]any{"ui": map[string]any{"color": "blue"}})
	r = ts.expect(200, "PATCH", ws+"/dbs/shop", map[string]any{"ui": map[string]any{"color": "blue"}})
	jsonEq(t, "patched ui", r.obj()["ui"], `{"color":"blue"}`)

	// Rename: data and branches follow.
	ts.createTable("shop", "items")
	f(404, "POST", "/dbs/nope/rename", map[string]any{"newName": "x"})
	f(422, "POST", "/dbs/shop/rename", map[string]any{"newName": "blog"})
	f(400, "POST", "/dbs/shop/rename", map[string]any{"newName": "no good"})
	f(400, "POST", "/dbs/shop/rename", map[string]any{})
	r = ts.expect(200, "POST", ws+"/dbs/shop/rename", map[string]any{"newName": "store"})
	if r.obj()["name"] != "store" {
		t.Errorf("rename: %s", r.raw)
	}
	ts.expect(404, "GET", "/db/shop:main/tables/items/schema", nil)
	ts.expect(200, "GET", "/db/store:main/tables/items/schema", nil)

	r = ts.expect(200, "DELETE", ws+"/dbs/store", nil)
	jsonEq(t, "delete", r.body, `{"status":"completed"}`)
	f(404, "DELETE", "/dbs/store", nil)
	f(404, "GET", "/dbs/store", nil)
}

func TestRegionsConfigured(t *testing.T) {
	ts := startServer(t, Options{Compat: CompatXata})
	r := ts.expect(200, "GET", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/regions", nil)
	regions := r.obj()["regions"].([]any)
	if len(regions) != 5 || regions[0].(map[string]any)["id"] != "eu-west-1" {
		t.Errorf("compat regions: %s", r.raw)
	}
	ts.expect(201, "PUT", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/dbs/a", map[string]any{"region": "us-east-1"})
	ts.expect(400, "PUT", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/dbs/b", map[string]any{"region": "local"})
	ts.expect(400, "PATCH", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/dbs/nope", map[string]any{"ui": map[string]any{"color": "blue"}})

	ts = startServer(t, Options{Regions: []string{"dc1", "us-west-2"}})
	r = ts.expect(200, "GET", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/regions", nil)
	jsonEq(t, "configured", r.body, `{"regions":[{"id":"dc1","name":"dc1"},{"id":"us-west-2","name":"Oregon"}]}`)
}
