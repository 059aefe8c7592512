// Package console holds the web console that `coppice serve` serves at
// /console: plain HTML, CSS and JavaScript modules, embedded in the binary,
// so neither running nor testing the server needs a JavaScript toolchain.
//
// The console is a client of the public API like any other: it calls the
// control plane (/user, /workspaces/…) and the data plane in its path
// prefix form (/ws/{workspace}/db/…) with the API key the user signs in
// with, which it keeps in the tab's session storage and never puts in a
// URL. Every value it shows is set as text (textContent, createTextNode);
// search highlights are split on their <em> marks, never parsed as HTML.
// The assets are written for ContentSecurityPolicy: no inline script, no
// style attributes, no string-to-HTML sinks (Trusted Types enforce it).
//
// Page routes, all answered with index.html (the script renders them):
//
//	/console/                                   workspaces
//	/console/w/{ws}                             databases of a workspace
//	/console/w/{ws}/settings                    members, invites, API keys
//	/console/w/{ws}/d/{db}                      branches and git mappings
//	/console/w/{ws}/d/{db}/b/{branch}           tables; search of the branch
//	/console/w/{ws}/d/{db}/b/{branch}/t/{table} records grid (?filter=&sort=&size=)
//	  …/t/{table}/schema, /summary, /search      schema, summaries, search
//	  …/t/{table}/new, /r/{id}                   insert, view and edit a record
//
// Files under /console/static/ are the assets below static/.
package console

import (
	"embed"
	"io/fs"
)

// static holds index.html and the assets it loads.
//
//go:embed static
var static embed.FS

// Files returns the console's files, index.html at the root.
func Files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	return sub
}

// Index is the path in Files of the page every console route answers with.
const Index = "index.html"

// ContentSecurityPolicy is the policy console responses carry. Scripts,
// styles and connections come from the server's own origin only; no inline
// script or style attribute runs; HTML sinks reject strings (Trusted Types
// without policies); no page may frame the console.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; " +
	"frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"
