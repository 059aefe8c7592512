package engine

import (
	"context"
	"encoding/json"

	"github.com/coppice-db/coppice/fts"
	"github.com/coppice-db/coppice/index"
)

// The tests write requests as JSON; these read their parts as the API
// does, panicking on JSON the test got wrong.

// ctx is the context of the tests' calls.
var ctx = context.Background()

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func mustFilter(raw string) Filter   { return must(index.ReadFilter([]byte(raw))) }
func mustSort(raw string) Sort       { return must(index.ReadSort([]byte(raw))) }
func mustColumns(raw string) Columns { return must(index.ReadColumns([]byte(raw))) }
func mustAggs(raw string) Aggs       { return must(index.ReadAggs([]byte(raw))) }

// readSearch reads the JSON of a search's target, filter and boosters
// into in, as the API does.
func readSearch(in *SearchRequest, target, filter, boosters []byte) error {
	var err error
	if in.Target, err = fts.ReadTarget(target); err != nil {
		return err
	}
	if in.Filter, err = index.ReadFilter(filter); err != nil {
		return err
	}
	in.Boosters, err = fts.ReadBoosters(boosters)
	return err
}

// summarizeRequest reads a summarize request body.
func summarizeRequest(body string) (SummarizeRequest, error) {
	var b struct {
		Filter          json.RawMessage `json:"filter"`
		Columns         json.RawMessage `json:"columns"`
		Summaries       json.RawMessage `json:"summaries"`
		Sort            json.RawMessage `json:"sort"`
		SummariesFilter json.RawMessage `json:"summariesFilter"`
		Consistency     string          `json:"consistency"`
		Page            struct {
			Size *int `json:"size"`
		} `json:"page"`
	}
	in := SummarizeRequest{}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		return in, err
	}
	in.Consistency, in.PageSize = b.Consistency, b.Page.Size
	var err error
	if in.Filter, err = index.ReadFilter(b.Filter); err != nil {
		return in, err
	}
	if in.Columns, err = index.ReadGroupColumns(b.Columns); err != nil {
		return in, err
	}
	if in.Summaries, err = index.ReadSummaries(b.Summaries); err != nil {
		return in, err
	}
	if in.Sort, err = index.ReadSort(b.Sort); err != nil {
		return in, err
	}
	in.SummariesFilter, err = index.ReadSummariesFilter(b.SummariesFilter)
	return in, err
}
