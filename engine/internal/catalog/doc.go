// Package catalog is the global catalog of a data directory: users, their
// API keys (stored hashed), workspaces with their members and invites,
// the placement of every database (its id, workspace, name and region)
// and server-wide settings. It is small, read from storage once and kept
// in memory, written through.
//
// Every change is a command value (commands.go), a closed set with a
// versioned encoding (codec.go): its ids, times and the hashes of its
// generated secrets are resolved before it is staged, and staging it
// reads only the catalog, so the same commands on the same catalog write
// the same bytes. Bootstrap, the first accounts of a server, is one
// command. Commands are staged here and applied by package apply, the one
// write path; what a command starts in a database's own range (its first
// branch, a restored backup, a deletion) goes through the Host that apply
// provides, in the same batch.
package catalog
