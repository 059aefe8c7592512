package engine

import (
	"time"

	"github.com/coppice-db/coppice/index"
)

// The tests compare results in the shape the API sends them; these
// helpers build that shape from the typed results, as the index package's
// tests do (the API has its own renderer, held to the same shapes by its
// HTTP tests).

// summaryObjects nests each row's group values at their paths, beside the
// summaries.
func summaryObjects(res *SummarizeResult) []map[string]any {
	out := make([]map[string]any, len(res.Rows))
	for i, r := range res.Rows {
		m := map[string]any{}
		for j, v := range r.Groups {
			index.SetPath(m, res.Columns[j], v)
		}
		for j, v := range r.Summaries {
			m[res.Summaries[j]] = v
		}
		out[i] = m
	}
	return out
}

// aggregateObject is {"aggs": {name: result}}.
func aggregateObject(res *AggregateResult) map[string]any {
	return map[string]any{"aggs": aggObjects(res.Aggs)}
}

func aggObjects(aggs []AggResult) map[string]any {
	out := make(map[string]any, len(aggs))
	for _, a := range aggs {
		switch {
		case a.Kind == "percentiles":
			vals := map[string]any{}
			for _, p := range a.Percentiles {
				vals[index.PercentileKey(p.Percent)] = p.Value
			}
			out[a.Name] = map[string]any{"values": vals}
		case a.Buckets != nil:
			buckets := make([]any, len(a.Buckets))
			for i, b := range a.Buckets {
				m := aggObjects(b.Aggs)
				m["$key"], m["$count"] = b.Key, b.Count
				if t, ok := b.Key.(time.Time); ok {
					m["$key"] = t.Format("2006-01-02T15:04:05.000Z07:00")
				}
				buckets[i] = m
			}
			out[a.Name] = map[string]any{"values": buckets}
		default:
			out[a.Name] = a.Value
		}
	}
	return out
}
