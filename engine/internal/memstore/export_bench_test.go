package memstore

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

// Column ids of the generated docs in the stores of these benchmarks.
const (
	genTitle uint32 = iota + 1
	genCategory
	genTags
	genPrice
	genRating
	genViews
	genCreated
	genActive
	genOwner
)

// GenStore builds the column store of n generated docs (doc returns doc i
// as bench/gen makes it) the way a build from storage does, every string a
// copy of its own as a decoded record's, and the structures a query mix
// builds on it: the orders of the ids, titles, dates and prices, the
// categories' dictionary and the titles' trigram index.
func GenStore(tb testing.TB, n int, doc func(i int) map[string]any) *TableStore {
	s := &TableStore{cols: map[uint32]*Column{
		index.MetaIDColumn:        {kind: codec.KindString},
		index.MetaVersionColumn:   {kind: codec.KindInt},
		index.MetaCreatedAtColumn: {kind: codec.KindDatetime},
		index.MetaUpdatedAtColumn: {kind: codec.KindDatetime},
		genTitle:                  {kind: codec.KindString},
		genCategory:               {kind: codec.KindString},
		genTags:                   {kind: codec.KindStrings},
		genPrice:                  {kind: codec.KindFloat},
		genRating:                 {kind: codec.KindFloat},
		genViews:                  {kind: codec.KindInt},
		genCreated:                {kind: codec.KindDatetime},
		genActive:                 {kind: codec.KindBool},
		genOwner:                  {kind: codec.KindString},
	}}
	for _, c := range s.cols {
		c.store = s
	}
	num := func(v any) float64 {
		f, err := v.(json.Number).Float64()
		if err != nil {
			tb.Fatal(err)
		}
		return f
	}
	for i := range n {
		d := doc(i)
		created, err := time.Parse(time.RFC3339, d["created_at"].(string))
		if err != nil {
			tb.Fatal(err)
		}
		var tags []string
		for _, t := range d["tags"].([]any) {
			tags = append(tags, strings.Clone(t.(string)))
		}
		active := int64(0)
		if d["active"].(bool) {
			active = 1
		}
		rec := &codec.Record{ID: strings.Clone(d["id"].(string)), Version: 1, CreatedAt: created.UnixNano(), UpdatedAt: created.UnixNano(),
			Fields: []codec.Field{
				{Col: genTitle, Val: codec.String(strings.Clone(d["title"].(string)))},
				{Col: genCategory, Val: codec.String(strings.Clone(d["category"].(string)))},
				{Col: genTags, Val: codec.Strings(tags)},
				{Col: genPrice, Val: codec.Float(num(d["price"]))},
				{Col: genRating, Val: codec.Float(num(d["rating"]))},
				{Col: genViews, Val: codec.Int(int64(num(d["views"])))},
				{Col: genCreated, Val: codec.Datetime(created)},
				{Col: genActive, Val: codec.Value{Kind: codec.KindBool, Int: active}},
				{Col: genOwner, Val: codec.String(strings.Clone(d["owner"].(string)))},
			}}
		s.apply(uint32(i), rec)
	}
	for _, id := range []uint32{index.MetaIDColumn, genTitle, genCreated, genPrice} {
		s.cols[id].Order()
	}
	if _, _, ok := s.cols[genCategory].Codes(); !ok {
		tb.Fatal("no dictionary of categories")
	}
	if _, _, ok := s.cols[genTitle].SubstringCandidates("the", false); !ok {
		tb.Fatal("no trigram index of titles")
	}
	return s
}

// Column ids of the generated docs' title and tags in GenStore's stores.
const (
	GenTitle = genTitle
	GenTags  = genTags
)

// SortStrings orders the rows of string column id by value, as building
// the column's order does.
func (s *TableStore) SortStrings(id uint32) []uint32 {
	c := s.cols[id]
	return c.sortStrRows(c.present.ToArray())
}

// Size exposes the store's own estimate of its memory.
func (s *TableStore) Size() int64 { return s.size() }
