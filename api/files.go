package api

import (
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
)

// Files (compat-api.md §11): the binary endpoints of a record's file
// column, F = T/data/{id}/column/{column}/file, with Bearer auth, and the
// access URLs /file/{accessId} that records hand out, without it.

// fileURLs holds what the absolute URLs of files are built from when
// Options.PublicURL is not set: the address the server listens on.
type fileURLs struct {
	listen atomic.Pointer[string]
}

// listening records the listener's address as the default public base.
func (f *fileURLs) listening(addr net.Addr) {
	base := "http://" + addr.String()
	f.listen.Store(&base)
}

// publicBase is the scheme, host and path prefix of file URLs, without a
// trailing slash: Options.PublicURL, else http://{listen address}, else
// (a handler served by its caller's server) http://localhost.
func (s *Server) publicBase() string {
	if s.opts.PublicURL != "" {
		return strings.TrimRight(s.opts.PublicURL, "/")
	}
	if p := s.files.listen.Load(); p != nil {
		return *p
	}
	return "http://localhost"
}

// fileRoutes registers the file endpoints; t is the table route prefix.
// F and F/ are one node of the router's tree, which keeps F; serve hands
// F/ to fileIndexRoute.
func (s *Server) fileRoutes(t string) {
	r := s.router
	f := t + "/data/{id}/column/{column}/file"
	for _, p := range []struct {
		path string
		item bool
	}{{f, false}, {f + "/{fileId}", true}} {
		r.GET(p.path, s.handle(s.reads(s.fileEndpoint(p.item, s.getFile))))
		r.PUT(p.path, s.handle(s.writes(s.fileEndpoint(p.item, s.putFile))))
		r.DELETE(p.path, s.handle(s.writes(s.fileEndpoint(p.item, s.deleteFile))))
	}
	r.GET("/file/{accessId}", s.handleNoAuth(s.getFileByAccess))
	r.PUT("/file/{accessId}", s.handleNoAuth(s.putFileByAccess))
}

// keyFileIndex marks a request for F/ (a file route with an empty file id)
// that the router matched as F.
const keyFileIndex ctxKey = 1

// fileIndexRoute returns the handler of F/ paths: the F route's, with the
// request marked so that it selects "no file id" rather than "the file
// column's file". It returns nil for any other path.
func (s *Server) fileIndexRoute(method, path string, ctx *fasthttp.RequestCtx) fasthttp.RequestHandler {
	rest, ok := strings.CutSuffix(path, "/file/")
	if !ok || !strings.Contains(rest, "/column/") {
		return nil
	}
	h, _ := s.router.Lookup(method, path[:len(path)-1], ctx)
	if h == nil {
		return nil
	}
	return func(ctx *fasthttp.RequestCtx) {
		ctx.SetUserValue(keyFileIndex, true)
		defer ctx.RemoveUserValue(keyFileIndex) // user values outlive a request on its connection
		h(ctx)
	}
}

// handleNoAuth is handle without authentication: the access URLs carry
// their own authorization. They are capabilities, so in a cluster they
// pass no read barrier: the node answers from its replica (which catches
// up first when it does not have the file yet), or passes the request on
// to a node with a replica of the file's database.
func (s *Server) handleNoAuth(fn func(r *request) error) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		r, _ := ctx.UserValue(keyRequest).(*request)
		if r == nil {
			r = &request{ctx: ctx, s: s}
			defer func() {
				if r.stop != nil {
					r.stop()
				}
			}()
		}
		err := fn(r)
		if err != nil && s.forward(r, err) {
			return
		}
		if err != nil {
			s.writeError(ctx, r.requestID(), err)
		}
	}
}

// fileEndpoint resolves the target of a binary file request and hands it
// to fn; item is true on the .../file/ and .../file/{fileId} routes.
func (s *Server) fileEndpoint(item bool, fn func(r *request, ref engine.Ref, tg engine.FileTarget) error) func(r *request) error {
	return func(r *request) error {
		ref, table, err := r.tableRef()
		if err != nil {
			return err
		}
		index, _ := r.ctx.UserValue(keyFileIndex).(bool)
		tg := engine.FileTarget{Table: table, Item: item || index}
		if tg.Record, err = r.recordID(); err != nil {
			return err
		}
		if tg.Column, err = r.param("column"); err != nil {
			return err
		}
		if item {
			if tg.FileID, err = r.param("fileId"); err != nil {
				return err
			}
		}
		return fn(r, ref.Ref, tg)
	}
}

// getFile: GET F[/{fileId}], the file's bytes with its media type; 204
// when a file column holds no file.
func (s *Server) getFile(r *request, ref engine.Ref, tg engine.FileTarget) error {
	f, data, err := s.eng.Files().Get(ref, tg)
	if err != nil {
		return err
	}
	if f == nil {
		writeJSON(r.ctx, http.StatusNoContent, nil)
		return nil
	}
	writeFileBytes(r.ctx, f, data)
	return nil
}

// putFile: PUT F[/{fileId}], the body as the file's content and the
// Content-Type as its media type; 201 when it created the file, else 200,
// with the FileResponse.
func (s *Server) putFile(r *request, ref engine.Ref, tg engine.FileTarget) error {
	f, created, err := s.eng.Files().Put(ref, tg, string(r.ctx.Request.Header.ContentType()), r.ctx.PostBody())
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(r.ctx, status, s.fileJSON(f))
	return nil
}

// deleteFile: DELETE F[/{fileId}], 200 with the FileResponse of the removed
// file.
func (s *Server) deleteFile(r *request, ref engine.Ref, tg engine.FileTarget) error {
	f, err := s.eng.Files().Delete(ref, tg)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, s.fileJSON(f))
	return nil
}

// getFileByAccess: GET /file/{accessId}[?verify=], a public file, or a
// private one through a signed URL; 403 otherwise.
func (s *Server) getFileByAccess(r *request) error {
	id, err := r.param("accessId")
	if err != nil {
		return err
	}
	verify, _ := r.query("verify")
	f, data, err := s.eng.Files().ReadByAccess(id, verify)
	if err != nil {
		return err
	}
	writeFileBytes(r.ctx, f, data)
	return nil
}

// putFileByAccess: PUT /file/{accessId}?verify=, an upload URL: the body
// becomes the file's content; 201 with the FileResponse.
func (s *Server) putFileByAccess(r *request) error {
	id, err := r.param("accessId")
	if err != nil {
		return err
	}
	verify, _ := r.query("verify")
	f, err := s.eng.Files().UploadByAccess(id, verify, string(r.ctx.Request.Header.ContentType()), r.ctx.PostBody())
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusCreated, s.fileJSON(f))
	return nil
}

// writeFileBytes answers with a file's content.
func writeFileBytes(ctx *fasthttp.RequestCtx, f *engine.File, data []byte) {
	ctx.SetStatusCode(http.StatusOK)
	ctx.SetContentType(f.MediaType)
	ctx.SetBody(data)
}

// fileJSON renders a file object (compat-api.md §11.1): the default fields,
// or only those a projection named, plus the content and URLs asked for.
// The id is that of a file[] item; a file column's file has none.
func (s *Server) fileJSON(f *engine.File) map[string]any {
	out := make(map[string]any, 12)
	want := func(k string) bool { return f.Fields == nil || f.Fields[k] }
	if f.ID != "" {
		out["id"] = f.ID
	}
	if want("name") {
		out["name"] = f.Name
	}
	if want("mediaType") {
		out["mediaType"] = f.MediaType
	}
	if want("size") {
		out["size"] = f.Size
	}
	if want("version") {
		out["version"] = f.Version
	}
	if want("enablePublicUrl") {
		out["enablePublicUrl"] = f.EnablePublicURL
	}
	if want("signedUrlTimeout") {
		out["signedUrlTimeout"] = f.SignedURLTimeout
	}
	if want("uploadUrlTimeout") {
		out["uploadUrlTimeout"] = f.UploadURLTimeout
	}
	if want("attributes") {
		attrs := map[string]any{}
		if f.Image {
			attrs["width"], attrs["height"] = f.Width, f.Height
		}
		out["attributes"] = attrs
	}
	if f.AccessID == "" {
		return out
	}
	url := s.publicBase() + "/file/" + f.AccessID
	if want("url") {
		out["url"] = url
	}
	if f.Base64Content != nil {
		out["base64Content"] = *f.Base64Content
	}
	if f.SignedVerify != "" {
		out["signedUrl"] = url + "?verify=" + f.SignedVerify
	}
	if f.UploadVerify != "" {
		out["uploadUrl"] = url + "?verify=" + f.UploadVerify
	}
	return out
}

// filesJSON renders the items of a file[] column.
func (s *Server) filesJSON(l []engine.File) []any {
	out := make([]any, len(l))
	for i := range l {
		out[i] = s.fileJSON(&l[i])
	}
	return out
}
