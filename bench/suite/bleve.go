package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
)

// bleveFields are the indexed text columns, as Coppice searches them.
var bleveFields = []string{"title", "body"}

// bleveMapping indexes title and body with the analyzer closest to
// Coppice's: Unicode word boundaries and lowercase, no stop words, no
// stemming; values stored with term vectors for highlighting.
func bleveMapping() (*mapping.IndexMappingImpl, error) {
	m := bleve.NewIndexMapping()
	if err := m.AddCustomAnalyzer("plain", map[string]any{
		"type":          custom.Name,
		"tokenizer":     unicode.Name,
		"token_filters": []any{lowercase.Name},
	}); err != nil {
		return nil, err
	}
	m.DefaultAnalyzer = "plain"
	m.StoreDynamic = false
	m.IndexDynamic = false
	doc := bleve.NewDocumentStaticMapping()
	for _, f := range bleveFields {
		fm := bleve.NewTextFieldMapping()
		fm.Analyzer = "plain"
		fm.Store = true
		fm.IncludeTermVectors = true
		fm.IncludeInAll = false
		doc.AddFieldMappingsAt(f, fm)
	}
	m.DefaultMapping = doc
	return m, nil
}

// runBleve indexes the docs' text on disk and runs the W5 classes.
func (s *suite) runBleve() error {
	path := filepath.Join(s.cfg.work, "bleve")
	m, err := bleveMapping()
	if err != nil {
		return err
	}
	idx, err := bleve.New(path, m)
	if err != nil {
		return err
	}
	logf("bleve: indexing %d docs", s.ds.n)
	stop := make(chan struct{})
	defer close(stop)
	var load series
	t0 := time.Now()
	for lines := range s.ds.lineBatches(s.ds.n, false, stop) {
		t := time.Now()
		batch := idx.NewBatch()
		for _, line := range lines {
			var doc struct{ ID, Title, Body string }
			if err := json.Unmarshal(line, &doc); err != nil {
				idx.Close()
				return err
			}
			if err := batch.Index(doc.ID, map[string]any{"title": doc.Title, "body": doc.Body}); err != nil {
				idx.Close()
				return err
			}
		}
		if err := idx.Batch(batch); err != nil {
			idx.Close()
			return err
		}
		load.lat = append(load.lat, time.Since(t))
		load.units += len(lines)
		if load.units%100_000 == 0 {
			logf("bleve: %d docs", load.units)
		}
	}
	// Closing waits for the segments to be persisted: part of the load.
	if err := idx.Close(); err != nil {
		return err
	}
	load.elapsed = time.Since(t0)
	s.bleveDisk = dirSize(path)
	s.rep.add("W1", "text index (title, body)", sysBleve, load.summary("docs/s"),
		fmt.Sprintf("batches of %d, scorch on disk, until closed; latency per batch", batchSize))

	if idx, err = bleve.Open(path); err != nil {
		return err
	}
	defer idx.Close()
	for _, c := range s.ds.searchClasses() {
		qs := c.queries[:min(len(c.queries), s.cfg.search)]
		search := func(i int) error {
			req := bleve.NewSearchRequestOptions(bleveQuery(c, qs[i]), pageSize, 0, false)
			req.Highlight = bleve.NewHighlightWithStyle("html")
			req.Highlight.Fields = bleveFields
			_, err := idx.Search(req)
			return err
		}
		for i := range qs { // warm-up
			if err := search(i); err != nil {
				return fmt.Errorf("%s %q: %w", c.name, qs[i], err)
			}
		}
		sr, err := sequential(len(qs), search)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		s.rep.add("W5", c.name, sysBleve, sr.summary("q/s"), fmt.Sprintf("in process, top %d, html highlight", pageSize))
	}
	return nil
}

// bleveQuery is the query of a class over both fields: a match query
// (operator or) with the class's fuzziness, or a prefix query on the last
// word after matches of the others.
func bleveQuery(c searchClass, q string) query.Query {
	var parts []query.Query
	for _, f := range bleveFields {
		if c.prefix {
			words := strings.Fields(q)
			last := words[len(words)-1]
			p := bleve.NewPrefixQuery(last)
			p.SetField(f)
			parts = append(parts, p)
			if len(words) > 1 {
				m := bleve.NewMatchQuery(strings.Join(words[:len(words)-1], " "))
				m.SetField(f)
				m.SetOperator(query.MatchQueryOperatorOr)
				parts = append(parts, m)
			}
			continue
		}
		m := bleve.NewMatchQuery(q)
		m.SetField(f)
		m.SetFuzziness(c.fuzziness)
		m.SetOperator(query.MatchQueryOperatorOr)
		parts = append(parts, m)
	}
	return bleve.NewDisjunctionQuery(parts...)
}
