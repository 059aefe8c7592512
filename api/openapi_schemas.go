package api

// The schemas of the OpenAPI document (components/schemas), after
// spec/service-interface.md §2 and §4 and spec/compat-api.md. meta is the
// record metadata key of the server's mode: "svc", or "xata" in compat
// mode.

// obj is a JSON object of the document.
type obj = map[string]any

// ref points at a schema of components/schemas.
func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

// strDesc is a string schema with a description.
func strDesc(desc string) obj { return obj{"type": "string", "description": desc} }

// integer is an integer schema with a description.
func integer(desc string) obj { return obj{"type": "integer", "description": desc} }

// boolean is a boolean schema with a description.
func boolean(desc string) obj { return obj{"type": "boolean", "description": desc} }

// arrayOf is an array schema.
func arrayOf(items obj) obj { return obj{"type": "array", "items": items} }

// object is a closed object schema: the properties listed, those in
// required always present. The API rejects unknown keys in request bodies,
// and documents every key of its responses.
func object(props obj, required ...string) obj {
	o := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// openObject is an object schema that also allows keys it does not list.
func openObject(desc string, props obj, required ...string) obj {
	o := obj{"type": "object", "description": desc}
	if props != nil {
		o["properties"] = props
	}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// with returns o with the extra keys set, for a description or an example
// next to a shared schema.
func with(o obj, kv ...any) obj {
	out := make(obj, len(o)+len(kv)/2)
	for k, v := range o {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// namePattern's rule as a schema pattern (spec §2.1).
const (
	patternName      = `^[a-zA-Z0-9_\-~]+$`
	patternRecordID  = `^[a-zA-Z0-9_\-~:]+$`
	patternWorkspace = `^([a-zA-Z0-9][a-zA-Z0-9_\-~]+-)?[a-zA-Z0-9]{6}`
	patternMigration = `^mig_[0-9a-v]{20}$`
)

// schemas returns components/schemas.
func schemas(meta string) obj {
	name := func(desc string) obj {
		return obj{"type": "string", "pattern": patternName, "minLength": 1, "maxLength": 255, "description": desc}
	}
	dateTime := obj{"type": "string", "format": "date-time", "description": "RFC 3339, UTC, with milliseconds"}
	s := obj{
		"Error": object(obj{
			"id":      strDesc("request id, the same as the x-request-id header"),
			"message": strDesc("what is wrong"),
		}, "message"),
		"BulkError": object(obj{
			"errors": arrayOf(object(obj{
				"message": strDesc("why the record failed"),
				"status":  integer("the status of this failure on its own"),
			}, "message", "status")),
		}, "errors"),
		"TransactionError": object(obj{
			"id": strDesc("request id"),
			"errors": arrayOf(object(obj{
				"index":   obj{"type": "integer", "minimum": 0, "description": "0-based index of the failing operation"},
				"message": strDesc("why it failed"),
			}, "index", "message")),
		}, "errors"),
		"Status": object(obj{"status": strDesc("ok, ready or unavailable")}, "status"),

		"TableName":       name("table name"),
		"BranchName":      name("branch name"),
		"DBName":          name("database name"),
		"ColumnName":      obj{"type": "string", "minLength": 1, "description": "column name; a dotted path names a sub-column of an object column; never starts with $"},
		"RecordID":        obj{"type": "string", "pattern": patternRecordID, "minLength": 1, "maxLength": 255, "description": "record id: letters, digits and _ - ~ :"},
		"WorkspaceID":     obj{"type": "string", "pattern": patternWorkspace, "description": "{slug}-{core}, or the bare 6-character core"},
		"MigrationID":     obj{"type": "string", "pattern": patternMigration, "description": "migration id"},
		"DateTime":        dateTime,
		"MigrationStatus": obj{"type": "string", "enum": []any{"completed", "pending", "failed"}, "description": "always completed: every change is synchronous"},
		"Role":            obj{"type": "string", "enum": []any{"owner", "maintainer"}},

		"RecordMeta": openObject("record metadata; the key of this object is "+meta, obj{
			"version":   obj{"type": "integer", "minimum": 0, "description": "0 on insert, + 1 on every write; for optimistic concurrency (ifVersion)"},
			"createdAt": ref("DateTime"),
			"updatedAt": ref("DateTime"),
			"table":     strDesc("the record's table (search results)"),
			"score":     obj{"type": "number", "description": "relevance (search and vector search results)"},
			"highlight": obj{"type": "object", "description": "column → highlighted snippets, nested for object columns (search results)"},
			"warnings":  arrayOf(strDesc("an encoding or decoding problem")),
		}),
		"Record": openObject("a record: id, the metadata object "+meta+", and its set columns (null columns are omitted); "+
			"links are {id} unless expanded, json columns JSON text, datetimes RFC 3339", obj{
			"id": ref("RecordID"),
			meta: ref("RecordMeta"),
		}, "id", meta),
		"RecordValues": openObject("column values of a record write: column name → value; a link is the target id; "+
			"PATCH and upsert also take {\"$increment\"|\"$decrement\"|\"$multiply\"|\"$divide\": n} on numbers; "+
			"the "+meta+" key is ignored", nil),

		"LinkSettings":   object(obj{"table": ref("TableName")}, "table"),
		"VectorSettings": object(obj{"dimension": obj{"type": "integer", "minimum": 2, "maximum": 10000}}, "dimension"),
		"FileSettings":   object(obj{"defaultPublicAccess": boolean("new files get a public URL unless they say otherwise")}),
		"Column": object(obj{
			"name": ref("ColumnName"),
			"type": obj{"type": "string", "enum": []any{"bool", "int", "float", "string", "text", "email", "multiple", "link",
				"object", "datetime", "vector", "file[]", "file", "json", "fileMap"}, "description": "fileMap is accepted as an alias of file[] on input"},
			"link":         ref("LinkSettings"),
			"vector":       ref("VectorSettings"),
			"file":         ref("FileSettings"),
			"file[]":       ref("FileSettings"),
			"fileMap":      with(ref("FileSettings"), "description", "input alias of file[]"),
			"notNull":      boolean("only when the column is created"),
			"defaultValue": strDesc("default, parsed per type (datetime: RFC 3339 or now)"),
			"unique":       boolean("only when the column is created"),
			"columns":      with(arrayOf(ref("Column")), "description", "sub-columns of an object column"),
		}, "name", "type"),
		"Columns": object(obj{"columns": arrayOf(ref("Column"))}, "columns"),
		"Table": object(obj{
			"id":      strDesc("ignored on input"),
			"name":    ref("TableName"),
			"columns": arrayOf(ref("Column")),
			"revLinks": with(arrayOf(object(obj{"table": ref("TableName"), "column": ref("ColumnName")}, "table", "column")),
				"description", "the link columns, in any table, that point at this table; ignored on input"),
		}, "name", "columns"),
		"Schema": object(obj{
			"tables":      arrayOf(ref("Table")),
			"tablesOrder": arrayOf(ref("TableName")),
		}, "tables"),

		"BranchMetadata": object(obj{
			"repository": obj{"type": "string", "minLength": 1},
			"branch":     ref("BranchName"),
			"stage":      obj{"type": "string", "minLength": 1},
			"labels":     arrayOf(obj{"type": "string"}),
		}),
		"BranchDetails": object(obj{
			"databaseName":    ref("DBName"),
			"branchName":      ref("BranchName"),
			"createdAt":       ref("DateTime"),
			"id":              strDesc("branch id"),
			"version":         obj{"type": "integer", "minimum": 0},
			"lastMigrationID": strDesc("the schema head; empty before the first migration"),
			"metadata":        ref("BranchMetadata"),
			"startedFrom": object(obj{
				"branchName":  ref("BranchName"),
				"dbBranchID":  strDesc("id of the source branch"),
				"migrationID": strDesc("the source's schema head at the fork"),
			}, "branchName", "dbBranchID", "migrationID"),
			"schema": ref("Schema"),
		}, "databaseName", "branchName", "createdAt", "id", "version", "lastMigrationID", "schema"),
		"BranchList": object(obj{
			"databaseName": ref("DBName"),
			"branches":     arrayOf(object(obj{"name": ref("BranchName"), "createdAt": ref("DateTime")}, "name", "createdAt")),
		}, "databaseName", "branches"),
		"BranchCreated": object(obj{
			"databaseName": ref("DBName"),
			"branchName":   ref("BranchName"),
			"status":       ref("MigrationStatus"),
		}, "databaseName", "branchName", "status"),
		"StatusResponse": object(obj{"status": ref("MigrationStatus")}, "status"),
		"BranchStats":    branchStatsSchema(),

		"GitBranchMapping": object(obj{
			"mapping": arrayOf(ref("GitBranchEntry")),
		}, "mapping"),
		"GitBranchEntry": object(obj{
			"gitBranch":  obj{"type": "string", "minLength": 1},
			"xataBranch": with(ref("BranchName"), "description", "the service branch (the key keeps its legacy name)"),
		}, "gitBranch", "xataBranch"),
		"Warning": object(obj{"warning": strDesc("what happened")}, "warning"),
		"ResolvedBranch": object(obj{
			"branch": ref("BranchName"),
			"reason": object(obj{
				"code":    obj{"type": "string", "enum": []any{"FOUND_IN_MAPPING", "BRANCH_EXISTS", "FALLBACK_BRANCH", "DEFAULT_BRANCH"}},
				"message": strDesc("the reason in words"),
			}, "code", "message"),
		}, "branch", "reason"),

		"UISettings": object(obj{"color": obj{"type": "string", "minLength": 1}}),
		"DatabaseMetadata": object(obj{
			"name":      ref("DBName"),
			"region":    strDesc("region id"),
			"createdAt": ref("DateTime"),
			"ui":        ref("UISettings"),
		}, "name", "region", "createdAt"),
		"DatabaseList": object(obj{"databases": arrayOf(ref("DatabaseMetadata"))}, "databases"),
		"DatabaseCreated": object(obj{
			"databaseName": ref("DBName"),
			"branchName":   ref("BranchName"),
			"status":       ref("MigrationStatus"),
		}, "databaseName", "branchName", "status"),
		"Regions": object(obj{"regions": arrayOf(object(obj{"id": strDesc("region id"), "name": strDesc("display name")}, "id", "name"))}, "regions"),

		"TableCreated": object(obj{
			"branchName": strDesc("the {db}:{branch} path segment"),
			"tableName":  ref("TableName"),
			"status":     ref("MigrationStatus"),
		}, "branchName", "tableName", "status"),
		"SchemaUpdate": object(obj{
			"migrationID":       ref("MigrationID"),
			"parentMigrationID": strDesc("the previous head; empty for the first migration"),
			"status":            ref("MigrationStatus"),
		}, "migrationID", "parentMigrationID", "status"),

		"Workspace": object(obj{
			"id":          ref("WorkspaceID"),
			"name":        strDesc("display name"),
			"slug":        strDesc("URL-safe name"),
			"memberCount": obj{"type": "integer", "minimum": 1, "description": "members, not counting pending invites"},
			"plan":        obj{"type": "string", "enum": []any{"free", "pro"}},
		}, "id", "name", "slug", "memberCount", "plan"),
		"WorkspaceList": object(obj{"workspaces": arrayOf(object(obj{
			"id":   ref("WorkspaceID"),
			"name": strDesc("display name"),
			"slug": strDesc("URL-safe name"),
			"role": ref("Role"),
			"plan": obj{"type": "string", "enum": []any{"free", "pro"}},
		}, "id", "name", "slug", "role", "plan"))}, "workspaces"),
		"User": object(obj{
			"id":       strDesc("user id"),
			"email":    obj{"type": "string", "format": "email"},
			"fullname": obj{"type": "string"},
			"image":    obj{"type": "string"},
		}, "id", "email", "fullname", "image"),
		"Invite": object(obj{
			"inviteId": obj{"type": "string", "pattern": `^[a-zA-Z0-9]+$`},
			"email":    obj{"type": "string", "format": "email"},
			"expires":  ref("DateTime"),
			"role":     ref("Role"),
		}, "inviteId", "email", "expires", "role"),
		"CreatedInvite": object(obj{
			"inviteId":  obj{"type": "string", "pattern": `^[a-zA-Z0-9]+$`},
			"email":     obj{"type": "string", "format": "email"},
			"expires":   ref("DateTime"),
			"role":      ref("Role"),
			"inviteKey": strDesc("ik_…: the secret the invited user accepts with; shown only here"),
		}, "inviteId", "email", "expires", "role", "inviteKey"),
		"Members": object(obj{
			"members": arrayOf(object(obj{
				"userId":   strDesc("user id"),
				"fullname": obj{"type": "string"},
				"email":    obj{"type": "string", "format": "email"},
				"role":     ref("Role"),
			}, "userId", "fullname", "email", "role")),
			"invites": with(arrayOf(ref("Invite")), "description", "pending invites only"),
		}, "members", "invites"),
		"RoleRequest": object(obj{"role": ref("Role")}, "role"),
		"APIKeys":     object(obj{"keys": arrayOf(object(obj{"name": name("key name"), "createdAt": ref("DateTime")}, "name", "createdAt"))}, "keys"),
		"CreatedAPIKey": object(obj{
			"name":      strDesc("key name"),
			"key":       strDesc("the secret; shown only here"),
			"createdAt": ref("DateTime"),
		}, "name", "key", "createdAt"),
		"CreatedUser": object(obj{
			"user": ref("User"),
			"key":  strDesc("the new user's API key (named default); shown only here"),
		}, "user", "key"),
	}
	for k, v := range requestSchemas() {
		s[k] = v
	}
	for k, v := range recordSchemas(meta) {
		s[k] = v
	}
	for k, v := range querySchemas(meta) {
		s[k] = v
	}
	for k, v := range schemaEditSchemas() {
		s[k] = v
	}
	for k, v := range explainSchemas() {
		s[k] = v
	}
	for k, v := range clusterSchemas() {
		s[k] = v
	}
	return s
}

// branchStatsSchema is the answer of GET /db/{db_branch_name}/stats.
func branchStatsSchema() obj {
	series := arrayOf(object(obj{"timestamp": ref("DateTime"), "value": obj{"type": "integer", "minimum": 0}}, "timestamp", "value"))
	latency := object(obj{"p50": series, "p90": series})
	return object(obj{
		"timestamp":       ref("DateTime"),
		"interval":        strDesc("the window: 24h"),
		"resolution":      strDesc("one point per: 1h"),
		"numberOfRecords": series,
		"writesOverTime":  series,
		"readsOverTime":   series,
		"readLatency":     latency,
		"writeLatency":    latency,
		"warning":         strDesc("a notice about the numbers"),
	}, "timestamp", "interval", "resolution")
}

// recordSchemas are the shapes of record writes, bulk inserts,
// transactions and files.
func recordSchemas(meta string) obj {
	columns := with(arrayOf(obj{"type": "string"}), "description", "columns of the result, as in the columns query parameter")
	return obj{
		"RecordIDs": object(obj{"recordIDs": arrayOf(ref("RecordID"))}, "recordIDs"),
		"Records":   object(obj{"records": arrayOf(ref("Record"))}, "records"),
		"BulkInsert": object(obj{
			"records": with(arrayOf(ref("RecordValues")), "maxItems", 1000, "description", "at most 1000; all or nothing; ids may be given"),
		}, "records"),
		"TransactionRequest": object(obj{
			"operations": with(arrayOf(ref("TransactionOperation")), "maxItems", 1000),
		}, "operations"),
		"TransactionOperation": obj{"oneOf": []any{
			object(obj{"insert": object(obj{
				"table":      ref("TableName"),
				"record":     ref("RecordValues"),
				"createOnly": boolean("fail if the id exists; otherwise an explicit id replaces"),
				"ifVersion":  obj{"type": "integer", "minimum": 0},
				"columns":    columns,
			}, "table", "record")}, "insert"),
			object(obj{"update": object(obj{
				"table":     ref("TableName"),
				"id":        ref("RecordID"),
				"fields":    ref("RecordValues"),
				"ifVersion": obj{"type": "integer", "minimum": 0},
				"upsert":    boolean("insert when missing"),
				"columns":   columns,
			}, "table", "id", "fields")}, "update"),
			object(obj{"delete": object(obj{
				"table":         ref("TableName"),
				"id":            ref("RecordID"),
				"failIfMissing": boolean("fail when no record was deleted"),
				"columns":       columns,
			}, "table", "id")}, "delete"),
			object(obj{"get": object(obj{
				"table":   ref("TableName"),
				"id":      ref("RecordID"),
				"columns": columns,
			}, "table", "id")}, "get"),
		}},
		"TransactionResponse": object(obj{"results": arrayOf(object(obj{
			"operation": obj{"type": "string", "enum": []any{"insert", "update", "delete", "get"}},
			"id":        ref("RecordID"),
			"rows":      obj{"type": "integer", "minimum": 0, "maximum": 1},
			"columns":   obj{"type": "object", "description": "the projected values (get: the record; " + meta + " only without columns)"},
		}, "operation"))}, "results"),
		"FileResponse": object(obj{
			"id":               strDesc("item id (file[] columns)"),
			"name":             obj{"type": "string"},
			"mediaType":        obj{"type": "string"},
			"size":             obj{"type": "integer", "minimum": 0},
			"version":          obj{"type": "integer", "minimum": 0},
			"enablePublicUrl":  obj{"type": "boolean"},
			"signedUrlTimeout": obj{"type": "integer", "minimum": 0, "maximum": 86400},
			"uploadUrlTimeout": obj{"type": "integer", "minimum": 0, "maximum": 86400},
			"attributes":       openObject("width and height for images, else empty", nil),
			"url":              obj{"type": "string", "format": "uri"},
			"signedUrl":        obj{"type": "string", "format": "uri"},
			"uploadUrl":        obj{"type": "string", "format": "uri"},
			"base64Content":    obj{"type": "string"},
		}),
		"InputFile": object(obj{
			"id":               strDesc("keeps an existing file[] item"),
			"name":             obj{"type": "string", "maxLength": 1024},
			"mediaType":        obj{"type": "string", "minLength": 3, "maxLength": 255},
			"base64Content":    obj{"type": "string", "maxLength": 20971520},
			"enablePublicUrl":  obj{"type": "boolean"},
			"signedUrlTimeout": obj{"type": "integer", "minimum": 0, "maximum": 86400},
			"uploadUrlTimeout": obj{"type": "integer", "minimum": 0, "maximum": 86400},
		}, "name"),
	}
}

// querySchemas are the shapes of query, summarize, aggregate, search and
// vector search.
func querySchemas(meta string) obj {
	filter := "FilterExpression"
	return obj{
		"FilterExpression": openObject("a filter: column → literal or {$operator: value}, with $all, $any, $none, $not, "+
			"$exists, $existsNot/$notExists; see the spec's filter grammar", nil),
		"SortExpression": obj{"description": "column names, {column: asc|desc|random}, or a list of such objects; " +
			"{\"*\": \"random\"} sorts at random", "anyOf": []any{
			arrayOf(obj{"type": "string"}),
			obj{"type": "object", "additionalProperties": obj{"type": "string", "enum": []any{"asc", "desc", "random"}}},
			arrayOf(obj{"type": "object", "additionalProperties": obj{"type": "string", "enum": []any{"asc", "desc", "random"}}}),
		}},
		"ColumnsSelection": with(arrayOf(obj{"anyOf": []any{obj{"type": "string"}, ref("ProjectionConfig")}}),
			"description", "columns to return (* for all, link.column, link.*, revLink projections); id and "+meta+" always come"),
		"ProjectionConfig": openObject("a reverse-link projection: {name: \"<-table.column\", columns, as, limit, offset, sort}; "+
			"unknown keys are ignored", obj{
			"name":    strDesc("column name or <-table.linkColumn"),
			"columns": ref("ColumnsSelection"),
			"as":      strDesc("key in the result"),
			"sort":    ref("SortExpression"),
			"limit":   obj{"type": "integer", "minimum": 0, "default": 20},
			"offset":  obj{"type": "integer", "minimum": 0, "default": 0},
		}, "name"),
		"PageConfig": object(obj{
			"size":   obj{"type": "integer", "minimum": 1, "description": "default 20; at most 200 (1000 in compat mode); with a cursor, read from it when absent"},
			"offset": obj{"type": "integer", "minimum": 0, "description": "default 0; at most 800 (49000 in compat mode)"},
			"after":  obj{"type": []any{"string", "null"}, "description": "the page after a cursor; \"end\" tails the table"},
			"before": obj{"type": []any{"string", "null"}, "description": "the page before a cursor; \"end\" is the last page"},
			"start":  obj{"type": []any{"string", "null"}, "description": "the first page of a cursor's query"},
			"end":    obj{"type": []any{"string", "null"}, "description": "the last page of a cursor's query"},
		}),
		"Consistency": obj{"type": "string", "enum": []any{"strong", "eventual"}, "description": "strong (the default) sees every write acknowledged before the request; eventual reads the answering node's replica as it is, which in a cluster may lag (one node is always consistent)"},
		"QueryRequest": object(obj{
			"columns":     ref("ColumnsSelection"),
			"filter":      ref(filter),
			"sort":        ref("SortExpression"),
			"page":        ref("PageConfig"),
			"consistency": ref("Consistency"),
		}),
		"QueryResponse": object(obj{
			"records": arrayOf(ref("Record")),
			"meta": object(obj{"page": object(obj{
				"cursor": strDesc("the cursor of the last record returned; carries filter, sort, columns and size"),
				"more":   boolean("true when more records follow"),
				"size":   obj{"type": "integer", "minimum": 1, "description": "the effective page size"},
			}, "cursor", "more", "size")}, "page"),
		}, "records", "meta"),
		"SummarizeRequest": object(obj{
			"filter":          ref(filter),
			"columns":         with(arrayOf(obj{"type": "string"}), "description", "group-by columns; [] makes one group"),
			"summaries":       obj{"type": "object", "description": "name → {count|min|max|sum|average: column}", "additionalProperties": obj{"type": "object", "minProperties": 1, "maxProperties": 1}},
			"sort":            ref("SortExpression"),
			"summariesFilter": ref(filter),
			"page":            object(obj{"size": obj{"type": "integer", "minimum": 1, "maximum": 1000, "default": 20}}),
			"consistency":     ref("Consistency"),
		}),
		"SummarizeResponse": object(obj{
			"summaries": arrayOf(openObject("one group: its column values (nested for links and objects) and summary values; nulls explicit", nil)),
		}, "summaries"),
		"AggregateRequest": object(obj{
			"filter": ref(filter),
			"aggs": obj{"type": "object", "description": "name → {count|sum|min|max|average|percentiles|uniqueCount|dateHistogram|topValues|numericHistogram: …}",
				"additionalProperties": obj{"type": "object"}},
			"consistency": ref("Consistency"),
		}),
		"AggregateResponse": object(obj{"aggs": openObject("name → result: a number, null, or {values: …} for percentiles and buckets", nil)}, "aggs"),
		"TargetExpression": with(arrayOf(obj{"anyOf": []any{
			obj{"type": "string"},
			object(obj{"column": obj{"type": "string"}, "weight": obj{"type": "number", "minimum": 1, "maximum": 10, "default": 1}}, "column"),
		}}), "description", "columns to search, each with an optional weight; * adds every other column"),
		"BoosterExpression": obj{"oneOf": []any{
			object(obj{"valueBooster": object(obj{
				"column": obj{"type": "string"}, "value": obj{"type": []any{"string", "number", "boolean"}},
				"factor": obj{"type": "number"}, "ifMatchesFilter": ref(filter),
			}, "column", "value", "factor")}, "valueBooster"),
			object(obj{"numericBooster": object(obj{
				"column": obj{"type": "string"}, "factor": obj{"type": "number"},
				"modifier":        obj{"type": "string", "enum": []any{"none", "log", "log1p", "ln", "ln1p", "square", "sqrt", "reciprocal"}},
				"ifMatchesFilter": ref(filter),
			}, "column", "factor")}, "numericBooster"),
			object(obj{"dateBooster": object(obj{
				"column": obj{"type": "string"}, "origin": ref("DateTime"),
				"scale": obj{"type": "string", "pattern": `^(\d+)(d|h|m|s|ms)$`}, "decay": obj{"type": "number"},
				"factor": obj{"type": "number", "minimum": 0}, "ifMatchesFilter": ref(filter),
			}, "column", "scale", "decay")}, "dateBooster"),
		}},
		"Highlight": object(obj{
			"enabled":    obj{"type": "boolean", "default": true},
			"encodeHTML": obj{"type": "boolean", "default": true},
		}),
		"SearchPage": object(obj{
			"size":   obj{"type": "integer", "minimum": 1, "maximum": 200, "default": 25},
			"offset": obj{"type": "integer", "minimum": 0, "maximum": 800, "default": 0},
		}),
		"SearchTableRequest": object(obj{
			"query":       obj{"type": "string", "minLength": 1},
			"fuzziness":   obj{"type": "integer", "minimum": 0, "maximum": 2, "default": 1},
			"prefix":      obj{"type": "string", "enum": []any{"phrase", "disabled"}, "default": "disabled"},
			"target":      ref("TargetExpression"),
			"filter":      ref(filter),
			"boosters":    arrayOf(ref("BoosterExpression")),
			"highlight":   ref("Highlight"),
			"page":        ref("SearchPage"),
			"consistency": ref("Consistency"),
		}),
		"SearchBranchRequest": object(obj{
			"query":     obj{"type": "string", "minLength": 1},
			"fuzziness": obj{"type": "integer", "minimum": 0, "maximum": 2, "default": 1},
			"prefix":    obj{"type": "string", "enum": []any{"phrase", "disabled"}, "default": "disabled"},
			"tables": with(arrayOf(obj{"anyOf": []any{
				ref("TableName"),
				object(obj{"table": ref("TableName"), "filter": ref(filter), "target": ref("TargetExpression"),
					"boosters": arrayOf(ref("BoosterExpression"))}, "table"),
			}}), "description", "default: every table"),
			"highlight":   ref("Highlight"),
			"page":        ref("SearchPage"),
			"consistency": ref("Consistency"),
		}, "query"),
		"SearchResponse": object(obj{
			"records":    with(arrayOf(ref("Record")), "description", "by score, each with "+meta+".score, "+meta+".table and "+meta+".highlight"),
			"totalCount": obj{"type": "integer", "minimum": 0, "description": "matches before paging (exact up to 10000)"},
			"warning":    obj{"type": "string"},
		}, "records", "totalCount"),
		"VectorSearchRequest": object(obj{
			"queryVector":        arrayOf(obj{"type": "number"}),
			"column":             strDesc("a vector column"),
			"similarityFunction": obj{"type": "string", "enum": []any{"cosineSimilarity", "l1", "l2"}, "default": "cosineSimilarity"},
			"size":               obj{"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
			"filter":             ref(filter),
		}, "queryVector", "column"),
		"VectorSearchResponse": object(obj{
			"records":    with(arrayOf(ref("Record")), "description", "nearest first, each with "+meta+".score"),
			"totalCount": obj{"type": "integer", "minimum": 0, "description": "records matching the filter with a vector, whatever the size"},
			"warning":    obj{"type": "string"},
		}, "records", "totalCount"),
	}
}

// schemaEditSchemas are the shapes of the schema edit endpoints.
func schemaEditSchemas() obj {
	one := func(key string, body obj) obj { return object(obj{key: body}, key) }
	return obj{
		"MigrationOp": obj{"description": "one schema change: an object with exactly one key", "oneOf": []any{
			one("addTable", object(obj{"table": ref("TableName")}, "table")),
			one("removeTable", object(obj{"table": ref("TableName")}, "table")),
			one("renameTable", object(obj{"oldName": ref("TableName"), "newName": ref("TableName")}, "oldName", "newName")),
			one("addColumn", object(obj{"table": ref("TableName"), "column": ref("Column")}, "table", "column")),
			one("removeColumn", object(obj{"table": ref("TableName"), "column": ref("ColumnName")}, "table", "column")),
			one("renameColumn", object(obj{"table": ref("TableName"), "oldName": ref("ColumnName"), "newName": ref("ColumnName")}, "table", "oldName", "newName")),
		}},
		"SchemaEdits": object(obj{
			"operations":        arrayOf(ref("MigrationOp")),
			"sourceMigrationID": strDesc("the branch head the edits apply to; another head is a 400"),
			"targetMigrationID": obj{"type": "string"},
		}, "operations"),
		"SchemaCompareRequest": object(obj{
			"schema":           ref("Schema"),
			"schemaOperations": with(arrayOf(ref("MigrationOp")), "description", "rename hints"),
			"branchOperations": with(arrayOf(ref("MigrationOp")), "description", "rename hints"),
		}, "schema"),
		"BranchCompareRequest": object(obj{
			"sourceBranchOperations": with(arrayOf(ref("MigrationOp")), "description", "rename hints"),
			"targetBranchOperations": with(arrayOf(ref("MigrationOp")), "description", "rename hints"),
		}),
		"SchemaComparison": object(obj{
			"source": ref("Schema"),
			"target": ref("Schema"),
			"edits":  ref("SchemaEdits"),
		}, "source", "target", "edits"),
		"SchemaApplyRequest":   object(obj{"edits": ref("SchemaEdits")}, "edits"),
		"SchemaPreviewRequest": object(obj{"edits": ref("SchemaEdits")}),
		"SchemaPreview":        object(obj{"original": ref("Schema"), "updated": ref("Schema")}, "original", "updated"),
		"SchemaUpdateRequest": object(obj{
			"parentID":   strDesc("the branch head the operations apply to; another head is a 400"),
			"operations": arrayOf(ref("MigrationOp")),
		}, "operations"),
		"SchemaHistoryRequest": object(obj{
			"page": object(obj{
				"after":  ref("MigrationID"),
				"before": ref("MigrationID"),
				"size":   obj{"type": "integer", "minimum": 1, "default": 20},
			}),
			"since": strDesc("a migration id: only migrations after it"),
		}),
		"Commit": object(obj{
			"id":            ref("MigrationID"),
			"parentID":      ref("MigrationID"),
			"checksum":      obj{"type": "string", "pattern": `^1:[0-9a-f]{64}$`},
			"mergeParentID": ref("MigrationID"),
			"title":         obj{"type": "string"},
			"message":       obj{"type": "string"},
			"createdAt":     ref("DateTime"),
			"operations":    arrayOf(ref("MigrationOp")),
		}, "id", "checksum", "createdAt", "operations"),
		"SchemaHistory": object(obj{
			"meta": object(obj{
				"cursor": strDesc("the last migration id of the page, for page.after"),
				"more":   obj{"type": "boolean"},
			}, "cursor", "more"),
			"logs": with(arrayOf(ref("Commit")), "description", "newest first"),
		}, "meta", "logs"),
		"SchemaPushRequest": object(obj{
			"migrations": with(arrayOf(object(obj{
				"id":            ref("MigrationID"),
				"parentID":      ref("MigrationID"),
				"checksum":      obj{"type": "string", "pattern": `^1:[0-9a-f]{64}$`},
				"title":         obj{"type": "string"},
				"message":       obj{"type": "string"},
				"operations":    arrayOf(ref("MigrationOp")),
				"createdAt":     strDesc("ignored"),
				"mergeParentID": strDesc("ignored"),
			}, "id", "checksum", "operations")), "description", "oldest first; known ids are skipped"),
		}, "migrations"),
	}
}

// requestSchemas are the bodies of the control plane, database, branch and
// table requests.
func requestSchemas() obj {
	return obj{
		"UpdateUserRequest": object(obj{
			"email":    obj{"type": "string", "format": "email"},
			"fullname": obj{"type": "string"},
			"image":    obj{"type": "string"},
		}, "email", "fullname", "image"),
		"CreateUserRequest": object(obj{
			"email":    obj{"type": "string", "format": "email"},
			"fullname": obj{"type": "string"},
			"image":    obj{"type": "string"},
		}, "email"),
		"CreateAPIKeyRequest": object(obj{"workspaceID": with(ref("WorkspaceID"), "description", "scope the key to this workspace of the caller")}),
		"WorkspaceRequest": object(obj{
			"name": obj{"type": "string", "minLength": 1},
			"slug": obj{"type": "string"},
		}, "name"),
		"InviteRequest": object(obj{
			"email": obj{"type": "string", "format": "email"},
			"role":  ref("Role"),
		}, "email", "role"),
		"CreateDatabaseRequest": object(obj{
			"region":     obj{"type": "string", "minLength": 1, "description": "one of GET /workspaces/{workspace_id}/regions"},
			"branchName": with(ref("BranchName"), "description", "the first branch; default main"),
			"ui":         ref("UISettings"),
			"metadata":   ref("BranchMetadata"),
		}, "region"),
		"UpdateDatabaseRequest": object(obj{"ui": ref("UISettings")}, "ui"),
		"RenameDatabaseRequest": object(obj{"newName": ref("DBName")}, "newName"),
		"CreateBranchRequest": object(obj{
			"from":     with(ref("BranchName"), "description", "the source branch; default main"),
			"metadata": ref("BranchMetadata"),
		}),
		"RenameRequest": object(obj{"name": obj{"type": "string", "minLength": 1}}, "name"),
		"AnyBody":       obj{"description": "any body; it is not read"},
	}
}
