package api

import "strings"

// The operations of the OpenAPI document, one per route, in the order of
// the API documents: control plane, data plane, then the built-in routes.

// Path prefixes of the templates.
const (
	docWS  = "/workspaces/{workspace_id}"
	docDB  = "/db/{db_branch_name}"
	docDBS = "/dbs/{db_name}"
	docT   = docDB + "/tables/{table_name}"
	docF   = docT + "/data/{record_id}/column/{column_name}/file"
)

// Example values shared by the operations.
const (
	exTime     = "2026-05-01T10:20:30.123Z"
	exRecordID = "rec_cn1h1q1l4pe3k9tq7d30"
	exMig      = "mig_cn1h2a1l4pe3k9tq7d40"
	exMigPrev  = "mig_cn1h29tl4pe3k9tq7d3g"
	exWS       = "acme-abc123"
	exUserID   = "usr_cn1h0a9l4pe3k9tq7d10"
	exInviteID = "inv9f8e7d6c5b4a3"
)

// apiOps lists every documented operation; meta is the record metadata key.
func apiOps(meta string) []apiOp {
	var ops []apiOp
	for _, part := range [][]apiOp{userOps(meta), workspaceOps(), databaseOps(), branchOps(), tableOps(meta),
		recordOps(meta), queryOps(meta), explainOps(), fileOps(), schemaOps(), clusterOps(), unsupportedOps(), operationsOps(), builtinOps()} {
		ops = append(ops, part...)
	}
	return ops
}

// exRecord is an example record with the given columns.
func exRecord(meta string, cols obj) obj {
	r := obj{"id": exRecordID, meta: obj{"version": 0, "createdAt": exTime, "updatedAt": exTime}}
	for k, v := range cols {
		r[k] = v
	}
	return r
}

// userOps are the caller's account, API keys and user administration.
func userOps(string) []apiOp {
	user := obj{"id": exUserID, "email": "ann@example.com", "fullname": "Ann", "image": ""}
	return []apiOp{
		{method: "GET", path: "/user", tag: "Users", summary: "Get the caller's user",
			responses: obj{"200": reply("the user the API key belongs to", "User", user)}, errors: []int{400, 404}},
		{method: "PUT", path: "/user", tag: "Users", summary: "Update the caller's user",
			desc:      "Replaces email, fullname and image; all three are required. An email another user has is a 400.",
			body:      jsonBody("UpdateUserRequest", obj{"email": "ann@example.com", "fullname": "Ann Lee", "image": ""}),
			responses: obj{"200": reply("the updated user", "User", user)}, errors: []int{400, 404}},
		{method: "DELETE", path: "/user", tag: "Users", summary: "Delete the caller's user",
			desc:      "Every key of the user stops working at once. The last owner of a workspace gets a 400: make another owner or delete the workspace first.",
			responses: obj{"204": noContent("deleted")}, errors: []int{400, 404}},
		{method: "GET", path: "/user/keys", tag: "Users", summary: "List the caller's API keys",
			desc:      "Secrets are never listed.",
			responses: obj{"200": reply("the keys", "APIKeys", obj{"keys": []any{obj{"name": "default", "createdAt": exTime}}})}},
		{method: "POST", path: "/user/keys/", tag: "Users", summary: "Create an API key without a name (always 400)",
			responses: obj{}, errors: []int{400}},
		{method: "DELETE", path: "/user/keys/", tag: "Users", summary: "Delete an API key without a name (always 400)",
			responses: obj{}, errors: []int{400}},
		{method: "POST", path: "/user/keys/{key_name}", tag: "Users", summary: "Create an API key",
			desc: "The optional body {\"workspaceID\"} scopes the key to one workspace of the caller: it reaches only that " +
				"workspace. A key created with a scoped key has the same scope. The secret is shown only in this response.",
			body: optionalBody("CreateAPIKeyRequest", obj{"workspaceID": exWS}),
			responses: obj{"201": reply("the new key", "CreatedAPIKey",
				obj{"name": "ci", "key": "cpk_3pV9qXk2bW7nR4tYzA8mLc5d", "createdAt": exTime})},
			errors: []int{400, 403, 409}},
		{method: "DELETE", path: "/user/keys/{key_name}", tag: "Users", summary: "Delete an API key",
			desc:      "The key stops working at once; it may be the calling key.",
			responses: obj{"204": noContent("deleted")}, errors: []int{400, 404}},
		{method: "POST", path: "/admin/users", tag: "Users", summary: "Create a user (administrator only)",
			desc: "Creates a user and a first, unscoped API key named default, shown only here. The user belongs to no " +
				"workspace until an owner invites them. Anyone but the server administrator gets a 403; a duplicate email a 409.",
			body: jsonBody("CreateUserRequest", obj{"email": "bob@example.com", "fullname": "Bob"}),
			responses: obj{"201": reply("the user and its key", "CreatedUser",
				obj{"user": obj{"id": exUserID, "email": "bob@example.com", "fullname": "Bob", "image": ""}, "key": "cpk_8sK2wQ4nV7xR1tYzB3mLc9e"})},
			errors: []int{400, 403, 409}},
	}
}

// workspaceOps are workspaces, members and invites.
func workspaceOps() []apiOp {
	ws := obj{"id": exWS, "name": "Acme", "slug": "acme", "memberCount": 2, "plan": "free"}
	invite := obj{"inviteId": exInviteID, "email": "bob@example.com", "expires": exTime, "role": "maintainer"}
	roleBody := jsonBody("RoleRequest", obj{"role": "maintainer"})
	ownerOnly := "Owners only: a maintainer gets a 403."
	return []apiOp{
		{method: "GET", path: "/workspaces", tag: "Workspaces", summary: "List the caller's workspaces",
			desc: "role is the caller's role. A key scoped to a workspace lists only that one.",
			responses: obj{"200": reply("the workspaces", "WorkspaceList",
				obj{"workspaces": []any{obj{"id": exWS, "name": "Acme", "slug": "acme", "role": "owner", "plan": "free"}}})}},
		{method: "POST", path: "/workspaces", tag: "Workspaces", summary: "Create a workspace",
			desc:      "The caller becomes its single owner. The slug defaults to the name with each run of other characters than [a-zA-Z0-9_~-] replaced by -.",
			body:      jsonBody("WorkspaceRequest", obj{"name": "Acme"}),
			responses: obj{"201": reply("the workspace", "Workspace", with(ws, "memberCount", 1))}, errors: []int{400}},
		{method: "GET", path: docWS, tag: "Workspaces", summary: "Get a workspace",
			responses: obj{"200": reply("the workspace", "Workspace", ws)}, errors: []int{400, 403, 404}},
		{method: "PUT", path: docWS, tag: "Workspaces", summary: "Update a workspace",
			desc: "name is required; the id's core does not change. " + ownerOnly,
			body: jsonBody("WorkspaceRequest", obj{"name": "Acme Inc", "slug": "acme-inc"}),
			responses: obj{"200": reply("the workspace", "Workspace",
				obj{"id": "acme-inc-abc123", "name": "Acme Inc", "slug": "acme-inc", "memberCount": 2, "plan": "free"})},
			errors: []int{400, 403, 404}},
		{method: "DELETE", path: docWS, tag: "Workspaces", summary: "Delete a workspace",
			desc:      "Deletes its databases, invites and the keys scoped to it. " + ownerOnly,
			responses: obj{"204": noContent("deleted")}, errors: []int{400, 403, 404}},
		{method: "GET", path: docWS + "/members", tag: "Workspaces", summary: "List members and pending invites",
			responses: obj{"200": reply("members and pending invites", "Members", obj{
				"members": []any{obj{"userId": exUserID, "fullname": "Ann", "email": "ann@example.com", "role": "owner"}},
				"invites": []any{invite}})},
			errors: []int{400, 403, 404}},
		{method: "PUT", path: docWS + "/members/{user_id}", tag: "Workspaces", summary: "Change a member's role",
			desc: "Demoting the last owner is a 400. " + ownerOnly,
			body: roleBody, responses: obj{"204": noContent("changed")}, errors: []int{400, 403, 404}},
		{method: "DELETE", path: docWS + "/members/{user_id}", tag: "Workspaces", summary: "Remove a member",
			desc:      "Owners remove anyone; any member removes themself. Removing the last owner is a 400. The member's keys scoped to the workspace are revoked.",
			responses: obj{"204": noContent("removed")}, errors: []int{400, 403, 404}},
		{method: "POST", path: docWS + "/invites", tag: "Workspaces", summary: "Invite someone",
			desc: "There is no mailer: the response carries the invite key (inviteKey) once, for the owner to hand over. " +
				"An email that is a member's or has a pending invite is a 409. Invites expire after 7 days. " + ownerOnly,
			body:      jsonBody("InviteRequest", obj{"email": "bob@example.com", "role": "maintainer"}),
			responses: obj{"201": reply("the invite", "CreatedInvite", with(invite, "inviteKey", "ik_8Hq2mX7vN4pR9tK3wZ6b"))},
			errors:    []int{400, 403, 404, 409}},
		{method: "POST", path: docWS + "/invites/{invite_id}/accept", tag: "Workspaces", summary: "Accept an invite",
			desc: "{invite_id} is the invite key (ik_…). The caller becomes a member with the invite's role. An unknown, used or expired key is a 404; " +
				"an invite made out to another email a 403.",
			responses: obj{"204": noContent("accepted")}, errors: []int{400, 403, 404}},
		{method: "POST", path: docWS + "/invites/{invite_id}/resend", tag: "Workspaces", summary: "Resend an invite",
			desc:      "Without a mailer this only checks the invite: 404 unknown, 400 accepted. " + ownerOnly,
			responses: obj{"204": noContent("checked")}, errors: []int{400, 403, 404}},
		{method: "PATCH", path: docWS + "/invites/{invite_id}", tag: "Workspaces", summary: "Update an invite's role",
			desc: "In place: the key and expiry do not change. An accepted invite is a 422. " + ownerOnly,
			body: roleBody, responses: obj{"200": reply("the invite", "Invite", invite)}, errors: []int{400, 403, 404, 422}},
		{method: "DELETE", path: docWS + "/invites/{invite_id}", tag: "Workspaces", summary: "Delete an invite",
			desc:      "An accepted invite cannot be deleted: 400. " + ownerOnly,
			responses: obj{"204": noContent("deleted")}, errors: []int{400, 403, 404}},
	}
}

// databaseOps are databases and regions.
func databaseOps() []apiOp {
	md := obj{"name": "app", "region": "local", "createdAt": exTime, "ui": obj{"color": "green"}}
	dbs := docWS + "/dbs/{db_name}"
	return []apiOp{
		{method: "GET", path: docWS + "/dbs", tag: "Databases", summary: "List databases",
			responses: obj{"200": reply("the databases", "DatabaseList", obj{"databases": []any{md}})}, errors: []int{400}},
		{method: "PUT", path: dbs, tag: "Databases", summary: "Create a database",
			desc: "Creates the database and its first branch (main, or branchName) with an empty schema. region must be one of " +
				"GET …/regions (400 otherwise); an existing name is a 422.",
			body: jsonBody("CreateDatabaseRequest", obj{"region": "local"}),
			responses: obj{"201": reply("created", "DatabaseCreated",
				obj{"databaseName": "app", "branchName": "main", "status": "completed"})},
			errors: []int{400, 422, 423}},
		{method: "GET", path: dbs, tag: "Databases", summary: "Get database metadata",
			responses: obj{"200": reply("the database", "DatabaseMetadata", md)}, errors: []int{400, 404}},
		{method: "PATCH", path: dbs, tag: "Databases", summary: "Update database metadata",
			desc:      "ui.color is the only setting; {} is a 400. An unknown database is a 404 (400 in compat mode).",
			body:      jsonBody("UpdateDatabaseRequest", obj{"ui": obj{"color": "green"}}),
			responses: obj{"200": reply("the database", "DatabaseMetadata", md)}, errors: []int{400, 404}},
		{method: "DELETE", path: dbs, tag: "Databases", summary: "Delete a database",
			desc:      "Deletes every branch, table and record of it, and its git mapping.",
			responses: obj{"200": reply("deleted", "StatusResponse", obj{"status": "completed"})}, errors: []int{400, 404}},
		{method: "POST", path: dbs + "/rename", tag: "Databases", summary: "Rename a database",
			desc: "Branches, data and git mapping follow. An existing newName is a 422.",
			body: jsonBody("RenameDatabaseRequest", obj{"newName": "app2"}),
			responses: obj{"200": reply("the renamed database", "DatabaseMetadata",
				obj{"name": "app2", "region": "local", "createdAt": exTime})},
			errors: []int{400, 404, 422}},
		{method: "GET", path: docWS + "/regions", tag: "Databases", summary: "List regions",
			desc: "The regions of --regions: local by default, the five legacy ids in compat mode.",
			responses: obj{"200": reply("the regions", "Regions",
				obj{"regions": []any{obj{"id": "local", "name": "Local"}}})},
			errors: []int{400}},
	}
}

// branchOps are branches, their metadata and stats, and git mapping.
func branchOps() []apiOp {
	md := obj{"repository": "github.com/acme/app", "branch": "feature-x", "stage": "dev", "labels": []any{"preview"}}
	series := []any{obj{"timestamp": "2026-05-01T10:00:00.000Z", "value": 3}}
	return []apiOp{
		{method: "GET", path: docDBS, tag: "Branches", summary: "List branches",
			desc: "Oldest first.",
			responses: obj{"200": reply("the branches", "BranchList", obj{"databaseName": "app",
				"branches": []any{obj{"name": "main", "createdAt": exTime}, obj{"name": "dev", "createdAt": exTime}}})},
			errors: []int{400, 404}},
		{method: "GET", path: docDB, tag: "Branches", summary: "Get branch details and schema",
			responses: obj{"200": reply("the branch", "BranchDetails", obj{
				"databaseName": "app", "branchName": "dev", "createdAt": exTime, "id": "bb_cn1h1a1l4pe3k9tq7d20", "version": 3,
				"lastMigrationID": exMig, "metadata": obj{},
				"startedFrom": obj{"branchName": "main", "dbBranchID": "bb_cn1h0q1l4pe3k9tq7d00", "migrationID": exMig},
				"schema": obj{"tables": []any{obj{"name": "users", "columns": []any{
					obj{"name": "name", "type": "string"}, obj{"name": "team", "type": "link", "link": obj{"table": "teams"}}}},
					obj{"name": "teams", "columns": []any{obj{"name": "name", "type": "string"}},
						"revLinks": []any{obj{"table": "users", "column": "team"}}}}},
			})},
			errors: []int{400, 404}},
		{method: "PUT", path: docDB, tag: "Branches", summary: "Create a branch",
			desc: "A copy-on-write fork of the source (main by default; the from query parameter wins over the body's): " +
				"schema and records, in constant time. A missing source is a 400, a missing database a 404, an existing branch a 422.",
			query:     []obj{queryParam("from", "the source branch", obj{"type": "string"}, false)},
			body:      optionalBody("CreateBranchRequest", obj{"from": "main", "metadata": obj{"stage": "dev"}}),
			responses: obj{"201": reply("created", "BranchCreated", obj{"databaseName": "app", "branchName": "dev", "status": "completed"})},
			errors:    []int{400, 404, 422, 423}},
		{method: "DELETE", path: docDB, tag: "Branches", summary: "Delete a branch",
			desc:      "Deletes the branch and its records; the last branch of a database is a 409.",
			responses: obj{"200": reply("deleted", "StatusResponse", obj{"status": "completed"})}, errors: []int{400, 404, 409}},
		{method: "GET", path: docDB + "/metadata", tag: "Branches", summary: "Get branch metadata",
			responses: obj{"200": reply("the metadata", "BranchMetadata", md)}, errors: []int{400, 404}},
		{method: "PUT", path: docDB + "/metadata", tag: "Branches", summary: "Replace branch metadata",
			body: jsonBody("BranchMetadata", md), responses: obj{"204": noContent("replaced")}, errors: []int{400, 404}},
		{method: "GET", path: docDB + "/stats", tag: "Branches", summary: "Branch stats",
			desc: "Records now, and reads and writes per hour over 24 hours, counted in memory since the server started.",
			responses: obj{"200": reply("the stats", "BranchStats", obj{"timestamp": exTime, "interval": "24h", "resolution": "1h",
				"numberOfRecords": series, "writesOverTime": series, "readsOverTime": series})},
			errors: []int{400, 404}},
		{method: "GET", path: docDBS + "/gitBranches", tag: "Branches", summary: "List the git branch mapping",
			responses: obj{"200": reply("the mapping", "GitBranchMapping",
				obj{"mapping": []any{obj{"gitBranch": "feature/x", "xataBranch": "feature-x"}}})},
			errors: []int{400, 404}},
		{method: "POST", path: docDBS + "/gitBranches", tag: "Branches", summary: "Map a git branch",
			desc:      "204 for a new git branch; 201 with a warning when an entry was replaced. An unknown service branch is a 400.",
			body:      jsonBody("GitBranchEntry", obj{"gitBranch": "feature/x", "xataBranch": "feature-x"}),
			responses: obj{"201": reply("an entry was replaced", "Warning", obj{"warning": "git branch [feature/x] was mapped to another branch; the mapping was replaced"}), "204": noContent("mapped")},
			errors:    []int{400, 404}},
		{method: "DELETE", path: docDBS + "/gitBranches", tag: "Branches", summary: "Unmap a git branch",
			query:     []obj{queryParam("gitBranch", "the git branch", obj{"type": "string", "minLength": 1}, true)},
			responses: obj{"204": noContent("unmapped")}, errors: []int{400, 404}},
		{method: "GET", path: docDBS + "/resolveBranch", tag: "Branches", summary: "Resolve a git branch to a branch",
			desc: "The mapping, else a branch of the same name, else fallbackBranch when it exists, else the default branch.",
			query: []obj{queryParam("gitBranch", "the git branch", obj{"type": "string"}, false),
				queryParam("fallbackBranch", "the branch to use when gitBranch resolves to nothing", obj{"type": "string"}, false)},
			responses: obj{"200": reply("the branch", "ResolvedBranch",
				obj{"branch": "main", "reason": obj{"code": "DEFAULT_BRANCH", "message": "using default branch"}})},
			errors: []int{400, 404}},
	}
}

// tableOps are tables and columns.
func tableOps(string) []apiOp {
	upd := reply("the migration", "SchemaUpdate", obj{"migrationID": exMig, "parentMigrationID": exMigPrev, "status": "completed"})
	cols := obj{"columns": []any{obj{"name": "name", "type": "string"}, obj{"name": "email", "type": "email", "unique": true},
		obj{"name": "team", "type": "link", "link": obj{"table": "teams"}}}}
	return []apiOp{
		{method: "PUT", path: docT, tag: "Tables", summary: "Create a table",
			desc: "Any body is ignored. An existing name (case-insensitive) is a 422.",
			responses: obj{"201": reply("created", "TableCreated",
				obj{"branchName": "app:main", "tableName": "users", "status": "completed"})},
			errors: []int{400, 404, 422}},
		{method: "DELETE", path: docT, tag: "Tables", summary: "Delete a table",
			responses: obj{"200": reply("deleted", "StatusResponse", obj{"status": "completed"})}, errors: []int{400, 404}},
		{method: "PATCH", path: docT, tag: "Tables", summary: "Rename a table",
			body: jsonBody("RenameRequest", obj{"name": "people"}), responses: obj{"200": upd}, errors: []int{400, 404, 422}},
		{method: "GET", path: docT + "/schema", tag: "Tables", summary: "Get a table's columns as defined",
			desc: "Object columns nested.", responses: obj{"200": reply("the columns", "Columns", cols)}, errors: []int{400, 404}},
		{method: "PUT", path: docT + "/schema", tag: "Tables", summary: "Replace a table's columns",
			desc: "Columns not listed are removed with their data.",
			body: jsonBody("Columns", cols), responses: obj{"200": upd}, errors: []int{400, 404, 409}},
		{method: "GET", path: docT + "/columns", tag: "Tables", summary: "List columns",
			desc: "Object sub-columns flattened to dotted names.", responses: obj{"200": reply("the columns", "Columns", cols)}, errors: []int{400, 404}},
		{method: "POST", path: docT + "/columns", tag: "Tables", summary: "Add a column",
			body: jsonBody("Column", obj{"name": "age", "type": "int"}), responses: obj{"200": upd}, errors: []int{400, 404}},
		{method: "GET", path: docT + "/columns/{column_name}", tag: "Tables", summary: "Get a column",
			responses: obj{"200": reply("the column", "Column", obj{"name": "age", "type": "int"})}, errors: []int{400, 404}},
		{method: "PATCH", path: docT + "/columns/{column_name}", tag: "Tables", summary: "Rename a column",
			desc: "The body has name and nothing else.",
			body: jsonBody("RenameRequest", obj{"name": "years"}), responses: obj{"200": upd}, errors: []int{400, 404}},
		{method: "DELETE", path: docT + "/columns/{column_name}", tag: "Tables", summary: "Delete a column",
			desc: "Its data goes with it.", responses: obj{"200": upd}, errors: []int{400, 404}},
	}
}

// recordOps are record writes and reads, bulk inserts and transactions.
func recordOps(meta string) []apiOp {
	cols := columnsParam(meta)
	ifVersion := queryParam("ifVersion", "write only if the record's version is this (else 422 version condition not met)",
		obj{"type": "integer", "minimum": 0}, false)
	values := obj{"name": "Ann", "email": "ann@example.com", "team": "core"}
	written := reply("the record's id and metadata, or with columns the record after the write", "Record", exRecord(meta, nil))
	return []apiOp{
		{method: "POST", path: docT + "/data", tag: "Records", summary: "Insert a record",
			desc:  "The server makes up the id (rec_ and 20 characters, time-ordered). An id in the body is a 400: use PUT data/{record_id}.",
			query: []obj{cols}, body: jsonBody("RecordValues", values),
			responses: obj{"201": reply("the record's id and metadata, or with columns the record", "Record",
				exRecord(meta, obj{"name": "Ann", "team": obj{"id": "core"}}))},
			errors: []int{400, 404}},
		{method: "PUT", path: docT + "/data/{record_id}", tag: "Records", summary: "Insert or replace a record by id",
			desc: "201 when it inserted, 200 when it replaced the whole record (columns not in the body get their default or null). " +
				"createOnly=true refuses to replace: 422.",
			query: []obj{cols, ifVersion, queryParam("createOnly", "fail with 422 if the id exists", obj{"type": "boolean"}, false)},
			body:  jsonBody("RecordValues", values), responses: obj{"200": written, "201": written}, errors: []int{400, 404, 422}},
		{method: "PATCH", path: docT + "/data/{record_id}", tag: "Records", summary: "Update a record",
			desc:  "Only the named columns change; null clears one. Numbers take $increment, $decrement, $multiply and $divide. A missing record is a 404.",
			query: []obj{cols, ifVersion}, body: jsonBody("RecordValues", obj{"age": obj{"$increment": 1}}),
			responses: obj{"200": written}, errors: []int{400, 404, 422}},
		{method: "POST", path: docT + "/data/{record_id}", tag: "Records", summary: "Upsert a record",
			desc:  "Inserts a missing record (201), else updates it like PATCH (200).",
			query: []obj{cols, ifVersion}, body: jsonBody("RecordValues", values),
			responses: obj{"200": written, "201": written}, errors: []int{400, 404, 422}},
		{method: "GET", path: docT + "/data/{record_id}", tag: "Records", summary: "Get a record",
			query: []obj{cols},
			responses: obj{"200": reply("the record", "Record",
				exRecord(meta, obj{"name": "Ann", "email": "ann@example.com", "team": obj{"id": "core"}}))},
			errors: []int{400, 404}},
		{method: "DELETE", path: docT + "/data/{record_id}", tag: "Records", summary: "Delete a record",
			desc:  "204, or with columns 200 and the record as it was.",
			query: []obj{cols},
			responses: obj{"200": reply("the deleted record", "Record", exRecord(meta, obj{"name": "Ann"})),
				"204": noContent("deleted")},
			errors: []int{400, 404}},
		{method: "POST", path: docT + "/bulk", tag: "Records", summary: "Insert records in bulk",
			desc: "Up to 1000 records in one atomic write. Failures answer {errors: [{message, status}]}, one per failing record, " +
				"with the status they share, else 400.",
			query: []obj{cols}, body: jsonBody("BulkInsert", obj{"records": []any{values}}),
			responses: obj{"200": obj{
				"description": "the ids in input order, or with columns the records",
				"headers":     obj{"x-request-id": obj{"$ref": "#/components/headers/RequestID"}},
				"content": obj{"application/json": obj{
					"schema":  obj{"oneOf": []any{ref("RecordIDs"), ref("Records")}},
					"example": obj{"recordIDs": []any{exRecordID}},
				}},
			}, "400": bulkErrorResponse(), "422": bulkErrorResponse()},
			errors: []int{404}},
		{method: "POST", path: docDB + "/transaction", tag: "Records", summary: "Run a transaction",
			desc: "Up to 1000 operations, run in order, all or nothing; later operations see earlier writes. Invalid operations, " +
				"or the first that fails, answer 400 {id, errors: [{index, message}]}.",
			body: jsonBody("TransactionRequest", obj{"operations": []any{
				obj{"insert": obj{"table": "users", "record": obj{"id": "ann", "name": "Ann"}}},
				obj{"update": obj{"table": "users", "id": "ann", "fields": obj{"age": obj{"$increment": 1}}}},
				obj{"get": obj{"table": "users", "id": "ann", "columns": []any{"name"}}},
			}}),
			responses: obj{"200": reply("one result per operation", "TransactionResponse", obj{"results": []any{
				obj{"operation": "insert", "id": "ann", "rows": 1, "columns": obj{}},
				obj{"operation": "update", "id": "ann", "rows": 1, "columns": obj{}},
				obj{"operation": "get", "columns": obj{"name": "Ann"}},
			}}), "400": obj{
				"description": "a malformed body (error body), or invalid or failing operations",
				"headers":     obj{"x-request-id": obj{"$ref": "#/components/headers/RequestID"}},
				"content": obj{"application/json": obj{
					"schema":  obj{"anyOf": []any{ref("TransactionError"), ref("Error")}},
					"example": obj{"id": "req_1a2b3c4d7", "errors": []any{obj{"index": 2, "message": "table [teams]: no rows deleted"}}},
				}},
			}},
			errors: []int{404}},
	}
}

// bulkErrorResponse is the failure of a bulk insert.
func bulkErrorResponse() obj {
	return obj{
		"description": "the failing records, or a malformed body (error body)",
		"headers":     obj{"x-request-id": obj{"$ref": "#/components/headers/RequestID"}},
		"content": obj{"application/json": obj{
			"schema":  obj{"anyOf": []any{ref("BulkError"), ref("Error")}},
			"example": obj{"errors": []any{obj{"message": "column [email]: value is not unique", "status": 400}}},
		}},
	}
}

// queryOps are queries, summaries, aggregations and searches.
func queryOps(meta string) []apiOp {
	hit := exRecord(meta, obj{"name": "Ann"})
	hit[meta].(obj)["score"] = 1.42
	hit[meta].(obj)["table"] = "users"
	hit[meta].(obj)["highlight"] = obj{"name": []any{"<em>Ann</em>"}}
	return []apiOp{
		{method: "POST", path: docT + "/query", tag: "Queries", summary: "Query a table",
			desc: "Filter, sort, columns and cursor or offset pages. Without a sort the order is id ascending; id breaks ties. " +
				"An empty body is {}. With a cursor, filter and sort are invalid; columns and page.size may change.",
			body: optionalBody("QueryRequest", obj{"filter": obj{"age": obj{"$ge": 30}}, "sort": obj{"age": "desc"},
				"columns": []any{"name", "age", "team.name"}, "page": obj{"size": 20}}),
			responses: obj{"200": reply("a page of records", "QueryResponse", obj{
				"records": []any{exRecord(meta, obj{"name": "Ann", "age": 35})},
				"meta":    obj{"page": obj{"cursor": "eJyrVkrLz1eyUkpKLFKqBQAaMQQX", "more": false, "size": 20}}})},
			errors: []int{400, 404, 503}},
		{method: "POST", path: docT + "/summarize", tag: "Queries", summary: "Summarize a table",
			desc: "Groups by columns and computes count, min, max, sum and average per group; nulls come last and explicit.",
			body: optionalBody("SummarizeRequest", obj{"columns": []any{"team"}, "summaries": obj{"people": obj{"count": "*"}}}),
			responses: obj{"200": reply("the groups", "SummarizeResponse",
				obj{"summaries": []any{obj{"team": obj{"id": "core"}, "people": 2}}})},
			errors: []int{400, 404}},
		{method: "POST", path: docT + "/aggregate", tag: "Queries", summary: "Aggregate a table",
			desc:      "Metrics and buckets over the records matching filter. No aggs counts them: {aggs: {count: N}}.",
			body:      optionalBody("AggregateRequest", obj{"aggs": obj{"total": obj{"count": "*"}, "avgAge": obj{"average": obj{"column": "age"}}}}),
			responses: obj{"200": reply("the results", "AggregateResponse", obj{"aggs": obj{"total": 2, "avgAge": 30.5}})},
			errors:    []int{400, 404}},
		{method: "POST", path: docT + "/search", tag: "Queries", summary: "Search a table",
			desc: "Full-text search with typo tolerance, prefixes, column weights, boosters and highlights. An empty body finds nothing.",
			body: optionalBody("SearchTableRequest", obj{"query": "anne", "fuzziness": 1}),
			responses: obj{"200": reply("the hits, best first", "SearchResponse",
				obj{"records": []any{hit}, "totalCount": 1})},
			errors: []int{400, 404}},
		{method: "POST", path: docT + "/vectorSearch", tag: "Queries", summary: "Nearest records by vector",
			body: jsonBody("VectorSearchRequest", obj{"queryVector": []any{0.1, 0.2, 0.3}, "column": "embedding", "size": 5}),
			responses: obj{"200": reply("the nearest records", "VectorSearchResponse",
				obj{"records": []any{exRecord(meta, obj{"name": "Ann"})}, "totalCount": 10})},
			errors: []int{400, 404}},
		{method: "POST", path: docDB + "/search", tag: "Queries", summary: "Search a branch",
			desc: "Searches every table, or the listed ones, each with its own filter, target and boosters; hits of all tables merged by score.",
			body: jsonBody("SearchBranchRequest", obj{"query": "ann", "tables": []any{"users", obj{"table": "teams", "target": []any{"name"}}}}),
			responses: obj{"200": reply("the hits, best first", "SearchResponse",
				obj{"records": []any{hit}, "totalCount": 1})},
			errors: []int{400, 404, 503}},
	}
}

// fileOps are the binary file endpoints and the file access URLs.
func fileOps() []apiOp {
	file := obj{"name": "photo.png", "mediaType": "image/png", "size": 2048, "version": 1, "enablePublicUrl": false,
		"signedUrlTimeout": 60, "uploadUrlTimeout": 86400, "attributes": obj{"width": 64, "height": 32},
		"url": "http://127.0.0.1:8080/file/a8f3k2m9q4z7x1c6v5b0n"}
	item := with(file, "id", "cn1h3q1l4pe3k9tq7d50")
	fileResp := func(desc string, ex obj) obj { return reply(desc, "FileResponse", ex) }
	verify := queryParam("verify", "the signature of a signedUrl or uploadUrl", obj{"type": "string"}, false)
	fileDesc := "F is " + docF + ": a file column's file, or with /{file_id} one item of a file[] column. "
	return []apiOp{
		{method: "GET", path: docF, tag: "Files", summary: "Download a file column's file",
			desc:      fileDesc + "204 when the column holds no file; a file[] column is a 400 (use F/{file_id}).",
			responses: obj{"200": bytesReply("the file's bytes, with its media type"), "204": noContent("no file")}, errors: []int{400, 404}},
		{method: "PUT", path: docF, tag: "Files", summary: "Upload a file column's file",
			desc:      fileDesc + "The media type comes from Content-Type. F/ (an empty file id) appends an item to a file[] column.",
			body:      bytesBody("the file's content"),
			responses: obj{"200": fileResp("replaced", file), "201": fileResp("created", file)}, errors: []int{400, 404}},
		{method: "DELETE", path: docF, tag: "Files", summary: "Delete a file column's file",
			desc:      fileDesc + "The column becomes null.",
			responses: obj{"200": fileResp("the removed file", file)}, errors: []int{400, 404}},
		{method: "GET", path: docF + "/{file_id}", tag: "Files", summary: "Download a file[] item",
			responses: obj{"200": bytesReply("the item's bytes, with its media type")}, errors: []int{400, 404}},
		{method: "PUT", path: docF + "/{file_id}", tag: "Files", summary: "Upload a file[] item",
			desc:      "Replaces the item's content (200) or creates it under that id (201).",
			body:      bytesBody("the item's content"),
			responses: obj{"200": fileResp("replaced", item), "201": fileResp("created", item)}, errors: []int{400, 404}},
		{method: "DELETE", path: docF + "/{file_id}", tag: "Files", summary: "Delete a file[] item",
			responses: obj{"200": fileResp("the removed item", item)}, errors: []int{400, 404}},
		{method: "GET", path: "/file/{access_id}", tag: "Files", summary: "Read a file through its URL",
			desc: "A record's file url. Public files need nothing; private ones the verify signature of a signedUrl, until it expires (403 otherwise). " +
				"No API key.",
			public: true, query: []obj{verify},
			responses: obj{"200": bytesReply("the file's bytes")}, errors: []int{400, 403, 404}},
		{method: "PUT", path: "/file/{access_id}", tag: "Files", summary: "Upload through an uploadUrl",
			desc:   "Stores the body as the file's content (media type from Content-Type); needs the verify signature. No API key.",
			public: true, query: []obj{verify}, body: bytesBody("the file's content"),
			responses: obj{"201": fileResp("stored", file)}, errors: []int{400, 403, 404}},
	}
}

// schemaOps are the schema edit endpoints.
func schemaOps() []apiOp {
	upd := reply("the migration", "SchemaUpdate", obj{"migrationID": exMig, "parentMigrationID": exMigPrev, "status": "completed"})
	users := obj{"name": "users", "columns": []any{obj{"name": "name", "type": "string"}}}
	schema := obj{"tables": []any{users}}
	edits := obj{"operations": []any{obj{"addTable": obj{"table": "users"}},
		obj{"addColumn": obj{"table": "users", "column": obj{"name": "name", "type": "string"}}}}}
	comparison := reply("the operations from the source schema to the target", "SchemaComparison",
		obj{"source": obj{"tables": []any{}}, "target": schema, "edits": edits})
	return []apiOp{
		{method: "POST", path: docDB + "/schema/compare", tag: "Schema", summary: "Compare the branch's schema with a schema",
			desc: "addTable first, then addColumn (links after every table exists), removeColumn, removeTable. Renames come only from the …Operations hints.",
			body: jsonBody("SchemaCompareRequest", obj{"schema": schema}), responses: obj{"200": comparison}, errors: []int{400, 404}},
		{method: "POST", path: docDB + "/schema/compare/{branch_name}", tag: "Schema", summary: "Compare two branches' schemas",
			body: optionalBody("BranchCompareRequest", nil), responses: obj{"200": comparison}, errors: []int{400, 404}},
		{method: "POST", path: docDB + "/schema/apply", tag: "Schema", summary: "Apply schema edits",
			desc: "All operations as one migration, all or nothing. A sourceMigrationID other than the head is a 400.",
			body: jsonBody("SchemaApplyRequest", obj{"edits": edits}), responses: obj{"200": upd}, errors: []int{400, 404}},
		{method: "POST", path: docDB + "/schema/preview", tag: "Schema", summary: "Preview schema edits",
			desc: "Nothing is applied.",
			body: optionalBody("SchemaPreviewRequest", obj{"edits": edits}),
			responses: obj{"200": reply("the schema before and after", "SchemaPreview",
				obj{"original": obj{"tables": []any{}}, "updated": schema})},
			errors: []int{400, 404}},
		{method: "POST", path: docDB + "/schema/update", tag: "Schema", summary: "Apply migration operations",
			desc: "A parentID other than the head is a 400.",
			body: jsonBody("SchemaUpdateRequest", obj{"operations": edits["operations"]}), responses: obj{"200": upd}, errors: []int{400, 404}},
		{method: "POST", path: docDB + "/schema/history", tag: "Schema", summary: "List migrations",
			desc: "Newest first, paged by migration id.",
			body: optionalBody("SchemaHistoryRequest", obj{"page": obj{"size": 20}}),
			responses: obj{"200": reply("a page of migrations", "SchemaHistory", obj{
				"meta": obj{"cursor": exMig, "more": false},
				"logs": []any{obj{"id": exMig, "parentID": exMigPrev, "checksum": "1:" + strings.Repeat("0", 64), "createdAt": exTime,
					"operations": edits["operations"]}}})},
			errors: []int{400, 404}},
		{method: "POST", path: docDB + "/schema/push", tag: "Schema", summary: "Push migrations",
			desc: "Appends migrations pulled elsewhere, oldest first, skipping known ids; every checksum and parent is checked first (400).",
			body: jsonBody("SchemaPushRequest", obj{"migrations": []any{obj{"id": exMig, "parentID": exMigPrev,
				"checksum": "1:" + strings.Repeat("0", 64), "operations": edits["operations"]}}}),
			responses: obj{"200": upd}, errors: []int{400, 404}},
	}
}

// unsupportedOps are the legacy endpoints this server answers with 501.
func unsupportedOps() []apiOp {
	no := func(method, path, summary string) apiOp {
		return apiOp{method: method, path: path, tag: "Unsupported", summary: summary,
			desc: "Not implemented: 501 with a JSON error, also when an event stream is asked for.",
			body: optionalBody("AnyBody", nil), responses: obj{}, errors: []int{501}}
	}
	return []apiOp{
		no("POST", docDB+"/sql", "SQL (not supported)"),
		no("POST", docDB+"/sql/batch", "SQL batch (not supported)"),
		no("POST", docT+"/ask", "Ask (not supported)"),
		no("POST", docT+"/ask/{session_id}", "Ask in a session (not supported)"),
	}
}

// builtinOps are the routes serve answers itself.
func builtinOps() []apiOp {
	return []apiOp{
		{method: "GET", path: "/healthz", tag: "Operations", summary: "Liveness",
			desc: "200 while the process serves requests.", public: true,
			responses: obj{"200": reply("alive", "Status", obj{"status": "ok"})}},
		{method: "GET", path: "/readyz", tag: "Operations", summary: "Readiness",
			desc: "200 once the server accepts requests; 503 before that and from the start of a shutdown, while requests in flight drain.", public: true,
			responses: obj{"200": reply("ready", "Status", obj{"status": "ready"}),
				"503": reply("not ready", "Status", obj{"status": "unavailable"})}},
		{method: "GET", path: "/openapi.json", tag: "Operations", summary: "This document",
			desc: "The OpenAPI 3.1 document of both planes, for the server's mode.", public: true,
			responses: obj{"200": obj{"description": "the document", "content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}}},
	}
}
