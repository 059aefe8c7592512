package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestSearchGolden runs testdata/search: records written to the search
// tables, then search requests with the ranking each returns. Regenerate
// with -rewrite and review the diff like code.
//
// Commands:
//
//	reset                       fresh engine with the docs table
//	put [branch=B]              input: one "id {json values}" per line
//	delete [branch=B] id=I      delete a record
//	fork from=B to=C            create C from B
//	search [branch=B]           input: a table search body (JSON); output:
//	                            "id score" per record, then its highlights,
//	                            then totalCount and any warning
func TestSearchGolden(t *testing.T) {
	var e *Engine
	var main Ref
	datadriven.RunTest(t, "testdata/search", func(t *testing.T, d *datadriven.TestData) string {
		if e == nil || d.Cmd == "reset" {
			e, main = recFixture(t, searchTables)
			if d.Cmd == "reset" {
				return "ok"
			}
		}
		ref := main
		if d.HasArg("branch") {
			d.ScanArgs(t, "branch", &ref.Branch)
		}
		switch d.Cmd {
		case "put":
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				id, body, _ := strings.Cut(line, " ")
				var vals map[string]any
				dec := json.NewDecoder(strings.NewReader(body))
				dec.UseNumber()
				if err := dec.Decode(&vals); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", ID: id, Values: vals}); err != nil {
					return "error: " + err.Error()
				}
			}
			return "ok"
		case "delete":
			var id string
			d.ScanArgs(t, "id", &id)
			if _, err := e.WriteOne(ref, Op{Kind: OpDelete, Table: "docs", ID: id}); err != nil {
				return "error: " + err.Error()
			}
			return "ok"
		case "fork":
			var from, to string
			d.ScanArgs(t, "from", &from)
			d.ScanArgs(t, "to", &to)
			r := main
			r.Branch = to
			if err := e.Branches().Create(r, CreateBranchRequest{From: from}); err != nil {
				return "error: " + err.Error()
			}
			return "ok"
		case "search":
			var body struct {
				Query     *string         `json:"query"`
				Fuzziness *float64        `json:"fuzziness"`
				Prefix    *string         `json:"prefix"`
				Target    json.RawMessage `json:"target"`
				Filter    json.RawMessage `json:"filter"`
				Boosters  json.RawMessage `json:"boosters"`
				Highlight *struct {
					Enabled    *bool `json:"enabled"`
					EncodeHTML *bool `json:"encodeHTML"`
				} `json:"highlight"`
				Page *struct {
					Size   *int `json:"size"`
					Offset *int `json:"offset"`
				} `json:"page"`
			}
			dec := json.NewDecoder(strings.NewReader(d.Input))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil {
				t.Fatalf("search body: %v", err)
			}
			in := SearchRequest{Query: body.Query, Fuzziness: body.Fuzziness, Prefix: body.Prefix}
			if err := readSearch(&in, body.Target, body.Filter, body.Boosters); err != nil {
				return "error: " + err.Error() + "\n"
			}
			if h := body.Highlight; h != nil {
				in.Highlight, in.EncodeHTML = h.Enabled, h.EncodeHTML
			}
			if p := body.Page; p != nil {
				in.Size, in.Offset = p.Size, p.Offset
			}
			res, err := e.SearchTable(ctx, ref, "docs", in, SearchOptions{})
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			var b strings.Builder
			for _, h := range res.Records {
				fmt.Fprintf(&b, "%s %.4f\n", h.Doc.ID, h.Score)
				if len(h.Highlight) > 0 {
					hl, _ := json.Marshal(h.Highlight)
					hl = bytes.ReplaceAll(hl, []byte(`\u003c`), []byte("<"))
					hl = bytes.ReplaceAll(hl, []byte(`\u003e`), []byte(">"))
					hl = bytes.ReplaceAll(hl, []byte(`\u0026`), []byte("&"))
					fmt.Fprintf(&b, "  %s\n", hl)
				}
			}
			fmt.Fprintf(&b, "totalCount %d\n", res.TotalCount)
			if res.Warning != "" {
				fmt.Fprintf(&b, "warning %s\n", res.Warning)
			}
			return b.String()
		}
		t.Fatalf("unknown command %s", d.Cmd)
		return ""
	})
}
