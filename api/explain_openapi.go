package api

import "strings"

// The explain endpoints in the OpenAPI document (explain.go).

// explainOps are the explain endpoints of query, summarize and search, of
// a table and of a branch.
func explainOps() []apiOp {
	step := func(kind, detail, via string, est, actual int, ms float64, children ...any) obj {
		s := obj{"kind": kind, "estimatedRows": est, "actualRows": actual, "timeMs": ms}
		if detail != "" {
			s["detail"] = detail
		}
		if via != "" {
			s["via"] = via
		}
		if len(children) > 0 {
			s["children"] = children
		}
		return s
	}
	query := step("query", "size 20", "", 20, 20, 0.412,
		step("records", "read and project", "", 21, 20, 0.398,
			step("heap", "age desc, id; limit 21", "column store", 21, 21, 0.205,
				step("and", "", "", 310, 180, 0.101,
					step("postings", `team = "core"`, "", 310, 310, 0.012),
					step("range", "age >= 30", "column store", 310, 180, 0.083)))))
	summarize := step("summarize", "size 20", "", 20, 2, 0.231,
		step("sort", "group values; first 20", "", 2, 2, 0.229,
			step("group", "by team: people = count(*)", "postings", 4, 2, 0.215,
				step("live", "", "", 4, 4, 0.004))))
	search := step("search", "1 word, fuzziness 1, highlight; size 25", "", 25, 1, 0.618,
		step("highlight", "users", "", 1, 1, 0.544,
			step("top-k", "k = 25", "", 1, 1, 0.301,
				step("scoring", "2 terms in 3 columns", "", 4, 1, 0.288,
					step("candidates", "", "", 4, 4, 0.006, step("live", "", "", 4, 4, 0.004))))))
	branchSearch := step("search", "1 word, fuzziness 1, highlight; size 25", "", 25, 2, 0.702,
		step("highlight", "users", "", 1, 1, 0.344,
			step("top-k", "k = 25", "", 1, 1, 0.201,
				step("scoring", "2 terms in 3 columns", "", 4, 1, 0.188,
					step("candidates", "", "", 4, 4, 0.006, step("live", "", "", 4, 4, 0.004))))),
		step("highlight", "teams", "", 1, 1, 0.301,
			step("top-k", "k = 25", "", 1, 1, 0.187,
				step("scoring", "1 term in 1 column", "", 2, 1, 0.171,
					step("candidates", "", "", 2, 2, 0.004, step("live", "", "", 2, 2, 0.003))))))
	explain := func(path, what, body string, example any, plan obj, errors ...int) apiOp {
		return apiOp{method: "POST", path: path, tag: "Queries", summary: "Explain " + what,
			desc: "Takes the body of " + strings.TrimSuffix(path, "/explain") + ", checks it as that endpoint does (the same errors), " +
				"runs it and answers how it ran instead of its result: a tree of steps, each with its kind, what it " +
				"tests, how it reached its rows, the most rows it could produce as known when it started, the rows it " +
				"produced and its time, children included. The README's Explain section lists the kinds of steps.",
			body:      optionalBody(body, example),
			responses: obj{"200": reply("the plan as it ran", "ExplainResponse", obj{"plan": plan, "text": "…", "totalTimeMs": 0.5})},
			errors:    errors}
	}
	return []apiOp{
		explain(docT+"/query/explain", "a query", "QueryRequest", obj{"filter": obj{"team": "core", "age": obj{"$ge": 30}}, "sort": obj{"age": "desc"}},
			query, 400, 404, 503),
		explain(docT+"/summarize/explain", "a summary", "SummarizeRequest", obj{"columns": []any{"team"}, "summaries": obj{"people": obj{"count": "*"}}},
			summarize, 400, 404),
		explain(docT+"/search/explain", "a table search", "SearchTableRequest", obj{"query": "anne"}, search, 400, 404),
		explain(docDB+"/search/explain", "a branch search", "SearchBranchRequest", obj{"query": "anne", "tables": []any{"users", "teams"}},
			branchSearch, 400, 404),
	}
}

// explainSchemas are the shapes of explain responses.
func explainSchemas() obj {
	rows := func(desc string) obj { return obj{"type": "integer", "minimum": 0, "description": desc} }
	return obj{
		"ExplainStep": object(obj{
			"kind": strDesc("the step: live, and, or, not, postings, range, scan, trigram, link (filters); walk, heap (order); " +
				"query, records; summarize, sort, having, group; search, highlight, top-k, scoring, candidates"),
			"detail":        strDesc("what the step tests or produces, e.g. a predicate or a sort order"),
			"via":           strDesc("how the step reached its rows, when it has several ways: ordered range, column store, ordered index, records, column order, id order, id index, id store, postings, codes, values"),
			"estimatedRows": rows("the most rows the step could produce as known when it started"),
			"actualRows":    rows("the rows the step produced; never above estimatedRows"),
			"timeMs":        obj{"type": "number", "minimum": 0, "description": "the step's time, its children's included"},
			"skipped":       boolean("the step did not run: an and stops once no candidate is left"),
			"children":      arrayOf(ref("ExplainStep")),
		}, "kind", "estimatedRows", "actualRows", "timeMs"),
		"ExplainResponse": object(obj{
			"plan":        ref("ExplainStep"),
			"text":        strDesc("the same tree, one step a line: kind detail [via how]: est N, actual M, time"),
			"totalTimeMs": obj{"type": "number", "minimum": 0, "description": "the whole request, reading its body included"},
		}, "plan", "text", "totalTimeMs"),
	}
}
