package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
)

// seed picks the dataset; every system loads the same records.
const seed = 1

// batchSize is the number of records per bulk request, Pebble batch and
// Bleve batch.
const batchSize = 1000

// dataset is the generated data of a run and its queries. The docs are
// generated once, on every core, into two files every system loads from:
// JSON lines (Coppice, Bleve, the Pebble ceiling) and PostgreSQL's COPY
// text format, so that no system's load waits on the generator.
type dataset struct {
	g *gen.Gen
	n int
	q gen.QuerySet
	// jsonPath holds one doc a line as a JSON object, id included.
	jsonPath string
	// copyPath holds one doc a line in COPY text format, in docColumns
	// order.
	copyPath string
	// scan holds the columns the summarize ceiling reads.
	scan scanColumns
}

// scanColumns are the docs' columns the W4 query reads, as plain arrays.
type scanColumns struct {
	category []uint8
	price    []float64
	views    []int64
	created  []int64
}

// newDataset makes the generator of n docs and nq queries of each class.
func newDataset(n, nq int) *dataset {
	g := gen.New(gen.Config{N: n, Seed: seed})
	return &dataset{g: g, n: n, q: g.Queries(nq)}
}

// chunk is the encoded docs [from, from+batchSize).
type chunk struct {
	idx        int
	json, copy []byte
	scan       scanColumns
}

// generate writes the two doc files into dir.
func (d *dataset) generate(dir string) error {
	d.jsonPath = filepath.Join(dir, "docs.jsonl")
	d.copyPath = filepath.Join(dir, "docs.copy")
	jf, err := os.Create(d.jsonPath)
	if err != nil {
		return err
	}
	defer jf.Close()
	cf, err := os.Create(d.copyPath)
	if err != nil {
		return err
	}
	defer cf.Close()
	chunks := (d.n + batchSize - 1) / batchSize
	jobs := make(chan int)
	results := make(chan chunk, 2*runtime.NumCPU())
	for range runtime.NumCPU() {
		go func() {
			for idx := range jobs {
				results <- d.encodeChunk(idx)
			}
		}()
	}
	go func() {
		for i := range chunks {
			jobs <- i
		}
		close(jobs)
	}()
	pending := map[int]chunk{}
	jw, cw := bufio.NewWriterSize(jf, 1<<20), bufio.NewWriterSize(cf, 1<<20)
	for next := 0; next < chunks; {
		c := <-results
		pending[c.idx] = c
		for {
			c, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			jw.Write(c.json)
			cw.Write(c.copy)
			d.scan.category = append(d.scan.category, c.scan.category...)
			d.scan.price = append(d.scan.price, c.scan.price...)
			d.scan.views = append(d.scan.views, c.scan.views...)
			d.scan.created = append(d.scan.created, c.scan.created...)
			next++
			if next%100 == 0 {
				logf("generated %d docs", next*batchSize)
			}
		}
	}
	if err := jw.Flush(); err != nil {
		return err
	}
	return cw.Flush()
}

// encodeChunk generates and encodes the docs of chunk idx.
func (d *dataset) encodeChunk(idx int) chunk {
	c := chunk{idx: idx}
	var jb, cb bytes.Buffer
	for i := idx * batchSize; i < min(d.n, (idx+1)*batchSize); i++ {
		doc := d.g.Doc(i)
		js, err := json.Marshal(doc)
		if err != nil {
			panic(fmt.Sprintf("marshal doc %d: %v", i, err))
		}
		jb.Write(js)
		jb.WriteByte('\n')
		appendCopyRow(&cb, doc)
		price, _ := doc["price"].(json.Number).Float64()
		views, _ := doc["views"].(json.Number).Int64()
		created, _ := time.Parse(time.RFC3339, doc["created_at"].(string))
		c.scan.category = append(c.scan.category, uint8(slices.Index(gen.Categories, doc["category"].(string))))
		c.scan.price = append(c.scan.price, price)
		c.scan.views = append(c.scan.views, views)
		c.scan.created = append(c.scan.created, created.Unix())
	}
	c.json, c.copy = jb.Bytes(), cb.Bytes()
	return c
}

// appendCopyRow writes a doc as a line of COPY text format.
func appendCopyRow(b *bytes.Buffer, doc map[string]any) {
	for i, col := range docColumns {
		if i > 0 {
			b.WriteByte('\t')
		}
		switch v := doc[col].(type) {
		case string:
			b.WriteString(copyEscape(v))
		case json.Number:
			b.WriteString(v.String())
		case bool:
			if v {
				b.WriteByte('t')
			} else {
				b.WriteByte('f')
			}
		case []any:
			b.WriteByte('{')
			for k, t := range v {
				if k > 0 {
					b.WriteByte(',')
				}
				b.WriteString(t.(string))
			}
			b.WriteByte('}')
		default:
			b.WriteString(`\N`)
		}
	}
	b.WriteByte('\n')
}

// copyEscape escapes a text value for COPY text format.
func copyEscape(s string) string {
	if !strings.ContainsAny(s, "\\\t\n\r") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`).Replace(s)
}

// lineBatches reads the JSON lines of docs [0, to) in batches of
// batchSize, on their own goroutine, a few batches ahead. When wrap is set
// the file is read again and again, each later pass renaming the ids (so
// they stay unique) until stop is closed. Closing stop ends it early.
func (d *dataset) lineBatches(to int, wrap bool, stop <-chan struct{}) <-chan [][]byte {
	out := make(chan [][]byte, 2)
	go func() {
		defer close(out)
		for pass := 0; ; pass++ {
			if !d.readLines(to, pass, out, stop) || !wrap {
				return
			}
		}
	}()
	return out
}

// readLines sends one pass over the file; it returns false when stopped.
func (d *dataset) readLines(to, pass int, out chan<- [][]byte, stop <-chan struct{}) bool {
	f, err := os.Open(d.jsonPath)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	batch := make([][]byte, 0, batchSize)
	send := func() bool {
		select {
		case out <- batch:
			batch = make([][]byte, 0, batchSize)
			return true
		case <-stop:
			return false
		}
	}
	for read := 0; read < to; read++ {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		if pass > 0 {
			line = bytes.Replace(line, []byte(`"id":"d`), fmt.Appendf(nil, `"id":"p%dd`, pass), 1)
		}
		if batch = append(batch, line); len(batch) == batchSize && !send() {
			return false
		}
	}
	if len(batch) > 0 {
		return send()
	}
	return true
}

// bulkBody joins JSON lines into the body of a bulk insert.
func bulkBody(lines [][]byte) []byte {
	n := 16
	for _, l := range lines {
		n += len(l) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"records":[`...)
	for i, l := range lines {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, l...)
	}
	return append(b, "]}"...)
}

// decodeDoc decodes a JSON line as gen made it (numbers as json.Number).
func decodeDoc(line []byte) (map[string]any, error) {
	var doc map[string]any
	return doc, decodeJSON(line, &doc)
}

// copyLines returns a reader of the first n lines of the COPY file.
func (d *dataset) copyLines(n int) (io.ReadCloser, error) {
	f, err := os.Open(d.copyPath)
	if err != nil {
		return nil, err
	}
	if n >= d.n {
		return f, nil
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var buf bytes.Buffer
	for range n {
		line, err := r.ReadBytes('\n')
		buf.Write(line)
		if err != nil {
			break
		}
	}
	return io.NopCloser(&buf), nil
}

// users returns the users table.
func (d *dataset) users() []map[string]any {
	var out []map[string]any
	d.g.Users(func(u map[string]any) error {
		out = append(out, u)
		return nil
	})
	return out
}
