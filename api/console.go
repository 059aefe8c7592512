package api

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/console"
)

// consolePrefix is where the web console lives; consoleStatic is the
// prefix of its assets.
const (
	consolePrefix = "/console"
	consoleStatic = consolePrefix + "/static/"
)

// consoleFile is one embedded console file, ready to send.
type consoleFile struct {
	body        []byte
	contentType string
	etag        string
}

// consoleFiles reads the embedded console once: path in console.Files →
// file.
var consoleFiles = sync.OnceValues(func() (map[string]*consoleFile, error) {
	files := map[string]*consoleFile{}
	err := fs.WalkDir(console.Files(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(console.Files(), p)
		if err != nil {
			return err
		}
		ct := consoleTypes[path.Ext(p)]
		if ct == "" {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(body)
		files[p] = &consoleFile{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	return files, err
})

// consoleTypes are the content types of the console's files by extension,
// fixed here rather than read from the system's MIME tables.
var consoleTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// isConsolePath reports whether a request path belongs to the console.
func isConsolePath(p string) bool {
	return p == consolePrefix || strings.HasPrefix(p, consolePrefix+"/")
}

// serveConsole answers a request under /console: an asset under
// /console/static/, else index.html, whose script renders the route. Only
// GET and HEAD are allowed; the console needs no authentication to load,
// since everything it shows comes from API calls made with the user's key.
func (s *Server) serveConsole(ctx *fasthttp.RequestCtx, id, p string) {
	h := &ctx.Response.Header
	h.Set("Content-Security-Policy", console.ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !ctx.IsGet() && !ctx.IsHead() {
		h.Set("Allow", "GET, HEAD")
		s.writeError(ctx, id, &statusError{http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s", ctx.Method(), p)})
		return
	}
	files, err := consoleFiles()
	if err != nil {
		s.writeError(ctx, id, fmt.Errorf("console assets: %w", err))
		return
	}
	name := console.Index
	if rest, ok := strings.CutPrefix(p, consoleStatic); ok {
		name = rest
	}
	f := files[name]
	if f == nil {
		s.writeError(ctx, id, &statusError{http.StatusNotFound, "no console file at " + p})
		return
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	if string(ctx.Request.Header.Peek("If-None-Match")) == f.etag {
		ctx.SetStatusCode(http.StatusNotModified)
		return
	}
	ctx.SetContentType(f.contentType)
	ctx.SetBody(f.body)
}
