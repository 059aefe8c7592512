package api

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// vectorFixture creates db with owners and docs: docs a…z hold a 2-d
// vector around the unit circle (e parallel to a, z zero, f none), for a
// query [1, 0].
func vectorFixture(t *testing.T, opts Options) *testServer {
	ts := startServer(t, opts)
	ts.createDB("db")
	ts.createTable("db", "owners", map[string]any{"name": "name", "type": "string"})
	ts.createTable("db", "docs",
		map[string]any{"name": "kind", "type": "string"},
		map[string]any{"name": "emb", "type": "vector", "vector": map[string]any{"dimension": 2}},
		map[string]any{"name": "owner", "type": "link", "link": map[string]any{"table": "owners"}},
	)
	ts.expect(201, "PUT", "/db/db:main/tables/owners/data/o1", map[string]any{"name": "ann"})
	for _, d := range []struct {
		id, kind string
		emb      []float64
	}{
		{"z", "y", []float64{0, 0}}, {"e", "y", []float64{2, 0}}, {"c", "x", []float64{1, 1}},
		{"a", "x", []float64{1, 0}}, {"f", "y", nil}, {"d", "y", []float64{-1, 0}}, {"b", "x", []float64{0, 1}},
	} {
		rec := map[string]any{"kind": d.kind, "owner": "o1"}
		if d.emb != nil {
			rec["emb"] = d.emb
		}
		ts.expect(201, "PUT", "/db/db:main/tables/docs/data/"+d.id, rec)
	}
	return ts
}

// vectorDocs is the vector search endpoint of the fixture's docs table.
const vectorDocs = "/db/db:main/tables/docs/vectorSearch"

// scored returns a vector search response's records as "id:score …" (four
// significant digits, the score read from the metadata object under key)
// and its totalCount, checking the response's shape.
func scored(t *testing.T, r *response, key string) (string, string) {
	t.Helper()
	if keys(r.body) != "records,totalCount" {
		t.Fatalf("response keys %s: %s", keys(r.body), r.raw)
	}
	recs, ok := r.obj()["records"].([]any)
	if !ok {
		t.Fatalf("records is not a list: %s", r.raw)
	}
	out := make([]string, len(recs))
	for i, x := range recs {
		rec := x.(map[string]any)
		meta, _ := rec[key].(map[string]any)
		if keys(meta) != "createdAt,score,updatedAt,version" {
			t.Fatalf("meta keys %s: %s", keys(meta), r.raw)
		}
		s, err := meta["score"].(json.Number).Float64()
		if err != nil {
			t.Fatalf("score %v", meta["score"])
		}
		out[i] = fmt.Sprintf("%s:%.4g", rec["id"], s)
	}
	return strings.Join(out, " "), fmt.Sprint(r.obj()["totalCount"])
}

func TestVectorSearchOverHTTP(t *testing.T) {
	ts := vectorFixture(t, Options{})
	f := func(body, want, wantTotal string) {
		t.Helper()
		got, total := scored(t, ts.expect(200, "POST", vectorDocs, body), "svc")
		if got != want || total != wantTotal {
			t.Errorf("%s:\n got %s (%s)\nwant %s (%s)", body, got, total, want, wantTotal)
		}
	}
	f(`{"queryVector":[1,0],"column":"emb"}`, "a:1 e:1 c:0.8536 b:0.5 z:0.5 d:0", "6")
	f(`{"queryVector":[1,0],"column":"emb","similarityFunction":"cosineSimilarity"}`, "a:1 e:1 c:0.8536 b:0.5 z:0.5 d:0", "6")
	f(`{"queryVector":[1,0],"column":"emb","similarityFunction":"l1"}`, "a:1 c:0.5 e:0.5 z:0.5 b:0.3333 d:0.3333", "6")
	f(`{"queryVector":[1,0],"column":"emb","similarityFunction":"l2"}`, "a:1 c:0.5 e:0.5 z:0.5 b:0.3333 d:0.2", "6")
	f(`{"queryVector":[3.0,0e0],"column":"emb","similarityFunction":"l2","size":3}`, "e:0.5 a:0.2 c:0.1667", "6")
	f(`{"queryVector":[1,0],"column":"emb","size":2}`, "a:1 e:1", "6")
	f(`{"queryVector":[1,0],"column":"emb","size":100}`, "a:1 e:1 c:0.8536 b:0.5 z:0.5 d:0", "6")
	f(`{"queryVector":[1,0],"column":"emb","filter":{"kind":"y"}}`, "e:1 z:0.5 d:0", "3")
	f(`{"queryVector":[1,0],"column":"emb","filter":{"owner.name":"ann"},"size":1}`, "a:1", "6")
	f(`{"queryVector":[1,0],"column":"emb","filter":{"kind":"none"}}`, "", "0")
	f(`{"queryVector":[1,0],"column":"emb","similarityFunction":null,"size":null,"filter":null}`, "a:1 e:1 c:0.8536 b:0.5 z:0.5 d:0", "6")

	// Exact scores and the whole record, links as {id}.
	r := ts.expect(200, "POST", vectorDocs, `{"queryVector":[1,0],"column":"emb","similarityFunction":"l2","size":5}`)
	recs := r.obj()["records"].([]any)
	var scores []string
	for _, x := range recs {
		scores = append(scores, string(x.(map[string]any)["svc"].(map[string]any)["score"].(json.Number)))
	}
	if got := strings.Join(scores, " "); got != "1 0.5 0.5 0.5 "+strconv.FormatFloat(1.0/3, 'g', -1, 64) {
		t.Errorf("l2 scores %s", got)
	}
	rec := recs[1].(map[string]any)
	if v := checkVectorMeta(t, rec, "svc"); v != "0" {
		t.Errorf("version %s", v)
	}
	delete(rec, "svc")
	jsonEq(t, "record", rec, `{"id":"c","kind":"x","emb":[1,1],"owner":{"id":"o1"}}`)

	// Writes show at once.
	ts.expect(200, "PATCH", "/db/db:main/tables/docs/data/b", map[string]any{"emb": []float64{1, 0}})
	ts.expect(204, "DELETE", "/db/db:main/tables/docs/data/a", nil)
	f(`{"queryVector":[1,0],"column":"emb","size":3}`, "b:1 e:1 c:0.8536", "5")

	// Bad requests are 400 with a message.
	bad := func(body, want string) {
		t.Helper()
		r := ts.expect(400, "POST", vectorDocs, body)
		if !strings.Contains(message(r), want) {
			t.Errorf("%s: message %q, want %q", body, message(r), want)
		}
	}
	bad(``, "a JSON request body is required")
	bad(`{}`, "column is required")
	bad(`{"queryVector":[1,0]}`, "column is required")
	bad(`{"column":"emb"}`, "queryVector is required")
	bad(`{"column":"emb","queryVector":null}`, "queryVector is required")
	bad(`{"column":"emb","queryVector":[]}`, "queryVector has 0 dimensions, column [emb] has 2")
	bad(`{"column":"emb","queryVector":[1,2,3]}`, "queryVector has 3 dimensions, column [emb] has 2")
	bad(`{"column":"emb","queryVector":["1","0"]}`, "")
	bad(`{"column":"emb","queryVector":"1,0"}`, "")
	bad(`{"column":"emb","queryVector":[1,1e999]}`, "")
	bad(`{"column":"nope","queryVector":[1,0]}`, "column [nope]: column not found")
	bad(`{"column":"kind","queryVector":[1,0]}`, "column [kind]: not a vector column")
	bad(`{"column":"owner","queryVector":[1,0]}`, "not a vector column")
	bad(`{"column":"emb","queryVector":[1,0],"similarityFunction":"dot"}`, "similarityFunction must be cosineSimilarity, l1 or l2, got [dot]")
	bad(`{"column":"emb","queryVector":[1,0],"similarityFunction":""}`, "got []")
	bad(`{"column":"emb","queryVector":[1,0],"similarityFunction":"L2"}`, "got [L2]")
	bad(`{"column":"emb","queryVector":[1,0],"size":0}`, "size must be between 1 and 100, got 0")
	bad(`{"column":"emb","queryVector":[1,0],"size":101}`, "size must be between 1 and 100, got 101")
	bad(`{"column":"emb","queryVector":[1,0],"size":-3}`, "size must be between")
	bad(`{"column":"emb","queryVector":[1,0],"size":2.5}`, "")
	bad(`{"column":"emb","queryVector":[1,0],"size":"2"}`, "")
	bad(`{"column":"emb","queryVector":[0,0]}`, "queryVector must not be all zeros")
	bad(`{"column":"emb","queryVector":[1,0],"filter":{"nope":1}}`, "column [nope]")
	bad(`{"column":"emb","queryVector":[1,0],"filter":{"kind":{"$bogus":1}}}`, "")
	bad(`{"column":"emb","queryVector":[1,0],"filter":[1]}`, "")
	bad(`{"column":"emb","queryVector":[1,0],"page":{"size":2}}`, "unknown field [page]")
	bad(`{"column":"emb","queryVector":[1,0],"k":2}`, "unknown field [k]")
	bad(`{"column":"emb","queryVector":[1,0]`, "")
	bad(`[]`, "")
	// A zero query vector is fine for distances.
	f(`{"queryVector":[0,0],"column":"emb","similarityFunction":"l1","size":1}`, "z:1", "5")

	ts.expect(404, "POST", "/db/db:main/tables/nope/vectorSearch", `{"column":"emb","queryVector":[1,0]}`)
	ts.expect(404, "POST", "/db/db:gone/tables/docs/vectorSearch", `{"column":"emb","queryVector":[1,0]}`)
	ts.expect(404, "POST", "/db/nodb:main/tables/docs/vectorSearch", `{"column":"emb","queryVector":[1,0]}`)
	ts.expect(405, "GET", vectorDocs, nil)
	ts.expect(401, "POST", vectorDocs, `{"column":"emb","queryVector":[1,0]}`, withKey("cpk_wrong"))
}

// checkVectorMeta checks the metadata object of a vector search record and
// returns its version.
func checkVectorMeta(t *testing.T, rec map[string]any, key string) string {
	t.Helper()
	meta, ok := rec[key].(map[string]any)
	if !ok {
		t.Fatalf("no %s object in %v", key, rec)
	}
	score := meta["score"]
	delete(meta, "score")
	v := checkMeta(t, rec, key)
	meta["score"] = score
	return v
}

func TestVectorSearchCompatMeta(t *testing.T) {
	ts := vectorFixture(t, Options{Compat: CompatXata})
	r := ts.expect(200, "POST", vectorDocs, `{"queryVector":[0,1],"column":"emb","similarityFunction":"l2","size":2}`)
	if got, total := scored(t, r, "xata"); got != "b:1 c:0.5" || total != "6" {
		t.Errorf("compat: %s (%s)", got, total)
	}
	rec := r.obj()["records"].([]any)[0].(map[string]any)
	if _, ok := rec["svc"]; ok {
		t.Errorf("svc key in compat mode: %v", rec)
	}
	checkVectorMeta(t, rec, "xata")
	// Filters name metadata under the mode's key.
	r = ts.expect(200, "POST", vectorDocs, `{"queryVector":[0,1],"column":"emb","filter":{"xata.version":0},"size":1}`)
	if got, total := scored(t, r, "xata"); got != "b:1" || total != "6" {
		t.Errorf("compat filter: %s (%s)", got, total)
	}
}

// TestVectorSearchCompatSize checks the size limit of each mode: 100 by
// default, 1000 in compat mode, where a search of size 1000 answers every
// match.
func TestVectorSearchCompatSize(t *testing.T) {
	for _, mode := range []struct {
		compat string
		max    int
	}{{CompatNone, 100}, {CompatXata, 1000}} {
		t.Run(mode.compat, func(t *testing.T) {
			ts := vectorFixture(t, Options{Compat: mode.compat})
			recs := make([]any, 150)
			for i := range recs {
				recs[i] = map[string]any{"kind": "bulk", "emb": []float64{float64(i + 1), 1}}
			}
			ts.expect(200, "POST", "/db/db:main/tables/docs/bulk", map[string]any{"records": recs})
			search := func(size int) *response {
				return ts.do("POST", vectorDocs, fmt.Sprintf(`{"queryVector":[1,0],"column":"emb","size":%d}`, size))
			}
			r := search(mode.max)
			if r.status != 200 {
				t.Fatalf("size %d: %d %s", mode.max, r.status, r.raw)
			}
			if n, want := len(r.obj()["records"].([]any)), min(mode.max, 156); n != want || fmt.Sprint(r.obj()["totalCount"]) != "156" {
				t.Errorf("size %d: %d records of %v, want %d", mode.max, n, r.obj()["totalCount"], want)
			}
			r = search(mode.max + 1)
			want := fmt.Sprintf("size must be between 1 and %d, got %d", mode.max, mode.max+1)
			if r.status != 400 || r.obj()["message"] != want {
				t.Errorf("size %d: %d %s, want 400 %q", mode.max+1, r.status, r.raw, want)
			}
		})
	}
}
