package api

// operationsOps are the backup, dump and load endpoints (admin_backup.go,
// dump.go).
func operationsOps() []apiOp {
	tarReply := obj{"description": "a tar stream of the checkpoint's files, then coppice-backup.json, the manifest with every file's size and SHA-256. " +
		"A stream that fails midway is cut off before its end, without the manifest.",
		"headers": obj{"x-request-id": obj{"$ref": "#/components/headers/RequestID"}},
		"content": obj{"application/x-tar": obj{"schema": obj{"type": "string", "contentMediaType": "application/x-tar"}}}}
	dumpReply := obj{"description": "the dump: a JSON header line, then the database's keys and a CRC-32C. " +
		"A dump that fails midway is cut off and fails its checksum.",
		"headers": obj{"x-request-id": obj{"$ref": "#/components/headers/RequestID"}},
		"content": obj{"application/octet-stream": obj{"schema": obj{"type": "string", "contentMediaType": "application/octet-stream"}}}}
	region := queryParam("region", "the new database's region, one of GET /workspaces/{workspace_id}/regions; default the dump's", obj{"type": "string"}, false)
	return []apiOp{
		{method: "POST", path: "/admin/backup", tag: "Operations", summary: "Back up the server (administrator only)",
			desc: "Takes a consistent checkpoint of the whole data directory as of now on the server's disk (writes pause only while it " +
				"is noted) and streams it; the checkpoint is removed when the stream ends. `coppice restore` makes a data directory of it. " +
				"Anyone but the server administrator, or a key scoped to a workspace, gets a 403; a backup while another runs a 409.",
			responses: obj{"200": tarReply}, errors: []int{403, 409}},
		{method: "GET", path: docDBS + "/dump", tag: "Operations", summary: "Dump a database",
			desc: "Every branch with its lineage, schema, migrations and records, files and the git branch mapping, from one snapshot, " +
				"in a versioned file that POST /dbs/{db_name}/load reads on this server or another.",
			responses: obj{"200": dumpReply}, errors: []int{400, 404}},
		{method: "POST", path: docDBS + "/load", tag: "Operations", summary: "Load a dump as a new database",
			desc: "Creates database {db_name} from a dump, all or nothing; an existing name is a 422, a dump that is malformed or fails its " +
				"checksum a 400, one over --max-load a 413, a load while another runs a 503.",
			query: []obj{region}, body: bytesBody("a dump, as GET /dbs/{db_name}/dump writes it"),
			responses: obj{"201": reply("the new database", "DatabaseMetadata", obj{"name": "app2", "region": "local", "createdAt": exTime})},
			errors:    []int{400, 422, 503}},
	}
}
