package engine

import (
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/files"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Files is the file storage of an engine (compat-api.md §11): the content
// of the files of records' file and file[] columns, read and written one
// file at a time, by record or by the access ids of file URLs. Record
// writes set files' descriptions; these calls write their content.
type Files struct {
	e *Engine
}

// Files returns the engine's file storage.
func (e *Engine) Files() *Files { return &e.files }

// Get reads the content of a file with its description. A file column
// without a file gives a nil *File and no error.
func (fs *Files) Get(ref Ref, tg FileTarget) (*File, []byte, error) {
	e := fs.e
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return nil, nil, err
	}
	d.Pin()
	defer d.Unpin()
	b, err := d.State().Branch(ref.Branch)
	if err != nil {
		return nil, nil, err
	}
	t, err := b.Schema.Table(tg.Table)
	if err != nil {
		return nil, nil, err
	}
	c, err := files.FileColumn(t, tg.Column)
	if err != nil {
		return nil, nil, err
	}
	var rec codec.Record
	if _, err := e.readRecord(d, b, t, tg.Record, &rec); err != nil {
		return nil, nil, err
	}
	v, _ := rec.Get(c.ID)
	stored := model.StoredFiles(c, v)
	i, err := files.PickFile(c, stored, tg)
	if err != nil {
		return nil, nil, err
	}
	if i < 0 {
		if c.Type == TypeFileArray {
			if tg.FileID == "" {
				return nil, nil, model.Invalidf("column [%s] is a file[] column: name an item with .../file/{fileId}", c.Path)
			}
			return nil, nil, model.NotFoundf("file [%s] not found", tg.FileID)
		}
		return nil, nil, nil
	}
	data, err := files.ReadContent(e.pdb, d.ID, b.Lineage, t.ID, c.ID, &stored[i])
	if err != nil {
		return nil, nil, err
	}
	scope := &fileScope{e: e, d: d, b: b, t: t, recordID: rec.ID}
	f, err := scope.file(c, &stored[i], fileWant{})
	return &f, data, err
}

// Put stores content as the target's file: it replaces the content of an
// existing file, or creates the file (with the name "") and reports
// created. mediaType "" keeps the stored media type. The record's version
// grows.
func (fs *Files) Put(ref Ref, tg FileTarget, mediaType string, content []byte) (*File, bool, error) {
	e := fs.e
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return nil, false, err
	}
	return e.writeFile(d, &apply.WriteFile{Branch: ref.Branch, Target: tg, Put: true, Content: content, MediaType: mediaType})
}

// Delete removes the target's file and returns it as it was. The record's
// version grows; a file column becomes null.
func (fs *Files) Delete(ref Ref, tg FileTarget) (*File, error) {
	e := fs.e
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return nil, err
	}
	f, _, err := e.writeFile(d, &apply.WriteFile{Branch: ref.Branch, Target: tg})
	return f, err
}

// writeFile applies a binary write to one file of a record as one command,
// and returns the file as a FileResponse shows it: with its signed and
// upload URLs.
func (e *Engine) writeFile(d *database, cmd *apply.WriteFile) (*File, bool, error) {
	if len(cmd.Content) > MaxFileBytes {
		return nil, false, model.Invalidf("file content is larger than %d bytes", MaxFileBytes)
	}
	mt, err := model.CheckMediaType(cmd.MediaType)
	if err != nil {
		return nil, false, err
	}
	cmd.MediaType, cmd.Now = mt, e.now()
	res, err := e.apply(d, cmd)
	if err != nil {
		return nil, false, err
	}
	w := res.(*apply.FileWritten)
	scope := &fileScope{e: e, d: d, b: w.Br, t: w.Tbl, recordID: cmd.Target.Record}
	f, err := scope.file(w.Col, &w.File, fileWant{signedURL: true, uploadURL: true})
	if err != nil {
		return nil, false, err
	}
	return &f, w.Created, nil
}

// accessFile finds the file an access id names, for the access URLs; the
// caller holds d.gcMu for reading.
func (e *Engine) accessFile(accessID string) (files.Loc, *database, error) {
	loc, err := files.DecodeAccessID(accessID)
	if err != nil {
		return loc, nil, err
	}
	if e.cl != nil && !e.cl.node.Placed(loc.DB) {
		if _, ok := e.cat.PlacementOf(loc.DB); ok {
			return loc, nil, e.cl.notHosted(loc.DB)
		}
		return loc, nil, model.NotFoundf("file not found")
	}
	d := e.mem.DB(loc.DB)
	if d == nil {
		return loc, nil, model.NotFoundf("file not found")
	}
	return loc, d, nil
}

// locate resolves the branch, table and column of an access id's location.
func locate(d *database, loc files.Loc) (*model.Branch, *model.Table, *model.Column, error) {
	b := d.State().ByID.At(loc.Branch)
	if b == nil {
		return nil, nil, nil, model.NotFoundf("file not found")
	}
	t := b.Schema.TableByID(loc.Table)
	if t == nil {
		return nil, nil, nil, model.NotFoundf("file not found")
	}
	c := t.ByID[loc.Col]
	if c == nil || !model.IsFileType(c.Type) {
		return nil, nil, nil, model.NotFoundf("file not found")
	}
	return b, t, c, nil
}

// ReadByAccess reads the file an access URL names (GET /file/{accessId}): a
// public file, or any file with a valid read signature (verify). The file
// must still be at the version the URL names.
func (fs *Files) ReadByAccess(accessID, verify string) (*File, []byte, error) {
	f, data, err := fs.readByAccess(accessID, verify)
	if fs.e.cl != nil && fs.e.cl.caughtUp(accessID, err) {
		f, data, err = fs.readByAccess(accessID, verify)
	}
	return f, data, err
}

// readByAccess is ReadByAccess on this node's replica as it is.
func (fs *Files) readByAccess(accessID, verify string) (*File, []byte, error) {
	e := fs.e
	loc, d, err := e.accessFile(accessID)
	if err != nil {
		return nil, nil, err
	}
	d.Pin()
	defer d.Unpin()
	b, t, c, err := locate(d, loc)
	if err != nil {
		return nil, nil, err
	}
	var rec codec.Record
	if _, err := e.readRecord(d, b, t, loc.RecordID, &rec); err != nil {
		if CodeOf(err) == CodeNotFound {
			err = model.NotFoundf("file not found")
		}
		return nil, nil, err
	}
	v, _ := rec.Get(c.ID)
	var sf *model.StoredFile
	stored := model.StoredFiles(c, v)
	for i := range stored {
		if stored[i].ID == loc.FileID && stored[i].Seq == loc.Seq {
			sf = &stored[i]
		}
	}
	if sf == nil {
		return nil, nil, model.NotFoundf("file not found")
	}
	if !sf.Public {
		ok, err := e.checkFileURL(files.PurposeRead, accessID, verify)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, nil, errFileAccess
		}
	}
	data, err := files.ReadContent(e.pdb, d.ID, b.Lineage, t.ID, c.ID, sf)
	if err != nil {
		return nil, nil, err
	}
	f := model.PublicFile(c, sf)
	return &f, data, nil
}

// UploadByAccess stores content as the file an upload URL names (PUT
// /file/{accessId}?verify=): the signature must be a valid upload
// signature; the file must still exist (at any version). mediaType "" keeps
// the stored one.
func (fs *Files) UploadByAccess(accessID, verify, mediaType string, content []byte) (*File, error) {
	f, err := fs.uploadByAccess(accessID, verify, mediaType, content)
	if fs.e.cl != nil && fs.e.cl.caughtUp(accessID, err) {
		f, err = fs.uploadByAccess(accessID, verify, mediaType, content)
	}
	return f, err
}

// uploadByAccess is UploadByAccess, resolving the URL on this node's
// replica as it is.
func (fs *Files) uploadByAccess(accessID, verify, mediaType string, content []byte) (*File, error) {
	e := fs.e
	ok, err := e.checkFileURL(files.PurposeUpload, accessID, verify)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errFileAccess
	}
	loc, d, err := e.accessFile(accessID)
	if err != nil {
		return nil, err
	}
	b, t, c, err := locate(d, loc)
	if err != nil {
		return nil, err
	}
	tg := FileTarget{Table: t.Name, Record: loc.RecordID, Column: c.Path}
	if c.Type == TypeFileArray {
		tg.Item, tg.FileID = true, loc.FileID
	}
	f, _, err := e.writeFile(d, &apply.WriteFile{Branch: b.Name, Target: tg, Put: true, Content: content, MediaType: mediaType, RequireID: loc.FileID})
	return f, err
}
