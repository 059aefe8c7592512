package api

import (
	"strings"
	"testing"
)

// TestListBodyErrors: bulk and transaction bodies, decoded one element at
// a time, answer malformed bodies with a 400 that names the problem, and
// store nothing.
func TestListBodyErrors(t *testing.T) {
	ts := recordsFixture(t, Options{})
	f := func(path, body, want string) {
		t.Helper()
		r := ts.expect(400, "POST", path, body)
		if msg := errMessage(r); msg != want {
			t.Errorf("%s %s: message %q, want %q", path, body, msg, want)
		}
	}
	const bulk, tx = "/db/db:main/tables/users/bulk", "/db/db:main/transaction"
	f(bulk, ``, "a JSON request body is required")
	f(bulk, `null`, "records is required")
	f(bulk, `{}`, "records is required")
	f(bulk, `{"records":null}`, "records is required")
	f(bulk, `[]`, "invalid JSON body: expected an object, got array")
	f(bulk, `"x"`, "invalid JSON body: expected an object, got string")
	f(bulk, `{"records":5}`, "invalid JSON body: field [records] must be an array, got number")
	f(bulk, `{"records":{}}`, "invalid JSON body: field [records] must be an array, got object")
	f(bulk, `{"records":[{"name":"a"},7]}`, "invalid JSON body: field [records] must be an object, got number")
	f(bulk, `{"records":[],"other":1}`, "invalid JSON body: unknown field [other]")
	f(bulk, `{"records":[],"records":[]}`, "invalid JSON body: field [records] appears twice")
	f(bulk, `{"records":[]} {}`, "invalid JSON body: unexpected data after the JSON value")
	f(bulk, `{"records":[{"name":"a"}`, "invalid JSON body: unexpected end of input")
	f(bulk, `{"records":[{"name":"a"},]}`, "invalid JSON body: invalid character ']' looking for beginning of value")
	f(tx, `{}`, "operations is required")
	f(tx, `{"operations":"x"}`, "invalid JSON body: field [operations] must be an array, got string")
	f(tx, `{"ops":[]}`, "invalid JSON body: unknown field [ops]")
	ts.expect(200, "POST", bulk, `{"records":[{"id":"ok1","age":1}]}`)
	ts.expect(404, "GET", "/db/db:main/tables/users/data/a", nil)
}

// TestRecordBodyValues: record bodies that the scan reads and bodies that
// it leaves to encoding/json (a key with an escape, nesting deeper than
// it reads) store the same values, escapes decoded.
func TestRecordBodyValues(t *testing.T) {
	ts := recordsFixture(t, Options{})
	const T = "/db/db:main/tables/users"
	const name = `"\u00e9\ud83d\ude00 \"q\"\t\ud800 \/"`
	deep := strings.Repeat("[", 70) + strings.Repeat("]", 70)
	ts.expect(201, "PUT", T+"/data/s1", `{"name":`+name+`,"tags":["a"]}`)
	ts.expect(201, "PUT", T+"/data/s2", `{"name":`+name+`,"config":`+deep+`}`)
	ts.expect(200, "PATCH", T+"/data/s2", `{"n\u0061me":`+name+`}`)
	ts.expect(200, "POST", T+"/bulk", `{"records":[{"id":"b1","name":`+name+`}]}`)
	ts.expect(200, "POST", T+"/bulk", `{"rec\u006frds":[{"id":"b2","name":`+name+`}]}`)
	for _, id := range []string{"s1", "s2", "b1", "b2"} {
		r := ts.expect(200, "GET", T+"/data/"+id, nil)
		if got, want := r.obj()["name"], "é😀 \"q\"\t\uFFFD /"; got != want {
			t.Errorf("%s: name %q, want %q", id, got, want)
		}
	}
}
