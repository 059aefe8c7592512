package engine

import (
	"encoding/base64"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/files"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index"
)

// fileScope locates the files of one record: the database, branch and
// table it was read from. Its files get access ids, and can be read.
type fileScope struct {
	e        *Engine
	r        pebble.Reader // where content is read; the caller keeps the lineage's layers
	d        *database
	b        *model.Branch
	t        *model.Table
	recordID string
}

// fileWant says what a projection asks of the files of a column.
type fileWant struct {
	fields                        map[string]bool // nil: the default fields
	content, signedURL, uploadURL bool
}

// wantFiles reads what projection p selects of file column c; ok is false
// when it selects nothing of it.
func wantFiles(p *index.Projection, c *model.Column) (w fileWant, ok bool) {
	named := p.FileFields[c.Path]
	if !p.Selected(c.Path) {
		if named == nil {
			return w, false
		}
		w.fields = named
	}
	w.content, w.signedURL, w.uploadURL = named["base64Content"], named["signedUrl"], named["uploadUrl"]
	return w, true
}

// files returns the files of a value of column c as File (file) or []File
// (file[]), nil for none. A nil scope gives files without location.
func (s *fileScope) files(c *model.Column, v codec.Value, w fileWant) (any, error) {
	stored := model.StoredFiles(c, v)
	if len(stored) == 0 {
		return nil, nil
	}
	out := make([]File, len(stored))
	for i := range stored {
		f, err := s.file(c, &stored[i], w)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	if c.Type == TypeFile {
		return out[0], nil
	}
	return out, nil
}

// file converts one stored file of column c, with what w asks for.
func (s *fileScope) file(c *model.Column, sf *model.StoredFile, w fileWant) (File, error) {
	f := model.PublicFile(c, sf)
	f.Fields = w.fields
	if s == nil {
		return f, nil
	}
	f.AccessID = files.EncodeAccessID(files.Loc{
		DB: s.d.ID, Branch: s.b.ID, Table: s.t.ID, Col: c.ID, Seq: sf.Seq, FileID: sf.ID, RecordID: s.recordID,
	})
	if w.content {
		r := s.r
		if r == nil {
			r = s.e.pdb
		}
		data, err := files.ReadContent(r, s.d.ID, s.b.Lineage, s.t.ID, c.ID, sf)
		if err != nil {
			return File{}, err
		}
		enc := base64.StdEncoding.EncodeToString(data)
		f.Base64Content = &enc
	}
	var err error
	if w.signedURL {
		if f.SignedVerify, err = s.e.signFileURL(files.PurposeRead, f.AccessID, sf.Signed); err != nil {
			return File{}, err
		}
	}
	if w.uploadURL {
		if f.UploadVerify, err = s.e.signFileURL(files.PurposeUpload, f.AccessID, sf.Upload); err != nil {
			return File{}, err
		}
	}
	return f, nil
}

// docFiles is the file part of source.doc: the value of file column c of a
// record as projection p selects it; nil when it selects nothing.
func (s *source) docFiles(c *model.Column, rec *codec.Record, v codec.Value, p *index.Projection) (any, error) {
	w, ok := wantFiles(p, c)
	if !ok {
		return nil, nil
	}
	var r pebble.Reader = s.e.pdb
	if s.snap != nil {
		r = s.snap
	}
	scope := &fileScope{e: s.e, r: r, d: s.d, b: s.b, t: s.t, recordID: rec.ID}
	return scope.files(c, v, w)
}

// scopeViewFiles gives the file fields of a record view their location, so
// that they carry access ids. Views are read with the default fields only.
func scopeViewFiles(v *RecordView, e *Engine, d *database, b *model.Branch, t *model.Table) {
	var scope *fileScope
	for i := range v.Fields {
		f := &v.Fields[i]
		if !model.IsFileType(f.Type()) {
			continue
		}
		if scope == nil {
			scope = &fileScope{e: e, d: d, b: b, t: t, recordID: v.ID}
		}
		f.files = scope
	}
}

// fileSecretName is the server-state entry holding the key of file URL
// signatures.
const fileSecretName = "file-secret"

// signFileURL returns the verify parameter that lets a URL with accessID
// serve purpose for ttl seconds from now.
func (e *Engine) signFileURL(purpose byte, accessID string, ttl int) (string, error) {
	secret, err := e.serverSecret(fileSecretName)
	if err != nil {
		return "", err
	}
	return files.Sign(secret, purpose, accessID, e.opts.Clock().Add(time.Duration(ttl)*time.Second)), nil
}

// checkFileURL reports whether verify is a valid, unexpired signature of
// accessID for purpose: unexpired while now < signedAt + ttl.
func (e *Engine) checkFileURL(purpose byte, accessID, verify string) (bool, error) {
	if verify == "" {
		return false, nil
	}
	secret, err := e.serverSecret(fileSecretName)
	if err != nil {
		return false, err
	}
	return files.Verify(secret, purpose, accessID, verify, e.opts.Clock()), nil
}

// errFileAccess answers a private file without a valid signature.
var errFileAccess = Errorf(CodeForbidden, "access to the file is denied: it is not public, or the URL's signature is invalid or has expired")
