package apply

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/internal/proccpu"
)

// BenchmarkPrepareBulk measures what a bulk insert of 1000 records works
// out before it takes the writer lock (prepare): converting the values,
// tokenizing the text and gathering the postings by bitmap. The records
// are like the benchmark dataset's docs: a title of 3–8 words and a body
// of 30–200 words drawn by Zipf from 50,000 words, a category, 1–5 tags,
// numbers, a time and a flag. One op prepares 1000 records.
func BenchmarkPrepareBulk(b *testing.B) {
	pdb, err := pebble.Open(b.TempDir(), &pebble.Options{Merger: layers.Merger, Logger: quietLogger{b}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pdb.Close() })
	a, err := Open(pdb, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	db := placeNotes(b, a, at, []model.ColumnDef{
		{Name: "title", Type: model.TypeString},
		{Name: "body", Type: model.TypeText},
		{Name: "category", Type: model.TypeString},
		{Name: "tags", Type: model.TypeMultiple},
		{Name: "price", Type: model.TypeFloat},
		{Name: "views", Type: model.TypeInt},
		{Name: "created_at", Type: model.TypeDatetime},
		{Name: "active", Type: model.TypeBool},
	})
	r := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 50_000)
	for i := range vocab {
		w := make([]byte, 3+r.IntN(8))
		for j := range w {
			w[j] = byte('a' + r.IntN(26))
		}
		vocab[i] = string(w)
	}
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
	text := func(n int) string {
		var sb strings.Builder
		for i := range n {
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(vocab[zipf.Uint64()])
		}
		return sb.String()
	}
	w := &WriteRecords{Branch: "main", Now: at, Bulk: true}
	for i := range 1000 {
		tags := make([]any, 1+r.IntN(5))
		for j := range tags {
			tags[j] = fmt.Sprintf("tag%d", r.IntN(200))
		}
		w.Ops = append(w.Ops, model.Op{Kind: model.OpInsert, Table: "notes", ID: fmt.Sprintf("r%06d", i), Values: map[string]any{
			"title":      text(3 + r.IntN(6)),
			"body":       text(30 + r.IntN(171)),
			"category":   fmt.Sprintf("cat%d", r.IntN(20)),
			"tags":       tags,
			"price":      r.Float64() * 100,
			"views":      r.IntN(1_000_000),
			"created_at": at.Add(-time.Duration(r.IntN(1e6)) * time.Second).Format(time.RFC3339),
			"active":     r.IntN(10) < 7,
		}})
	}
	d := a.DB(db)
	b.ReportAllocs()
	cpu0 := proccpu.Process()
	for b.Loop() {
		w.prepare(d, false)
	}
	if w.prep == nil {
		b.Fatal("nothing prepared")
	}
	// The process's CPU time says more than the elapsed time on a machine
	// shared with other work.
	b.ReportMetric(float64((proccpu.Process()-cpu0).Nanoseconds())/float64(b.N*len(w.Ops))/1e3, "cpu-µs/record")
}

// BenchmarkSortPostings measures sorting a bulk write's postings by id: of
// 1000 records like BenchmarkPrepareBulk's, about 25,000, most of them
// words' bitmaps (some with frequency bitmaps), the rest values' of a
// few columns. One op sorts them once.
func BenchmarkSortPostings(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	var ps []posting
	seen := map[string]bool{}
	add := func(id []byte) {
		if !seen[string(id)] {
			seen[string(id)] = true
			ps = append(ps, posting{id: string(id)})
		}
	}
	for len(ps) < 25_000 {
		w := make([]byte, 3+r.IntN(8))
		for j := range w {
			w[j] = byte('a' + r.IntN(26))
		}
		col := uint32(1 + r.IntN(2))
		switch r.IntN(10) {
		case 0:
			add(codec.AppendU64(codec.AppendU32([]byte{codec.BitmapPosting}, uint32(4+r.IntN(3))), r.Uint64()))
		case 1:
			add(codec.TermTFBitmapID(nil, col, uint8(r.IntN(3)), string(w)))
		default:
			add(codec.TermBitmapID(nil, col, string(w)))
		}
	}
	r.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	cpu0 := proccpu.Process()
	for b.Loop() {
		sortPostings(ps)
	}
	b.ReportMetric(float64((proccpu.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}
