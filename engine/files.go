package engine

import (
	"encoding/json"
	"errors"
	_ "image/gif"  // image.DecodeConfig reads GIF dimensions
	_ "image/jpeg" // and JPEG
	_ "image/png"  // and PNG
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/files"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// File columns (compat-api.md §11). A record keeps, for each file, only its
// metadata as JSON (StoredFile): what queries read stays small. The bytes
// live under their own key family (codec.KindFileChunk), keyed by table,
// column, file id and the commit that wrote them, in the same batch as the
// record version that names them (codec/KEYS.md, "File contents").
//
// A JSON write reaches the record in two steps. writer.fill validates the
// input and leaves a pending value (the validated file objects, content
// still in base64); writer.writeRow, which knows the version it replaces,
// resolves it through writeFiles: it keeps the content of files named by a
// known id, writes new content, and deletes the content nothing names any
// more. The binary endpoints (PutFile, DeleteFile) write the content
// themselves and store a resolved value.

// writeFiles is the file part of writeRow: before the new version rec of a
// row (nil: a delete) replaces old, it resolves rec's pending file values,
// writing their new content, and deletes the content of the branch's top
// layer that old named, rec no longer does, and no fork can see.
func (w *writer) writeFiles(t *model.Table, old, rec *codec.Record) error {
	if w.tx == nil {
		return nil
	}
	if rec != nil {
		for i := range rec.Fields {
			f := &rec.Fields[i]
			c := t.ByID[f.Col]
			if c == nil || !model.IsFileType(c.Type) || !strings.HasPrefix(f.Val.Str, model.PendingFiles) {
				continue
			}
			var prev codec.Value
			if old != nil {
				prev, _ = old.Get(c.ID)
			}
			v, err := w.resolveFiles(t, c, rec.ID, prev, f.Val.Str[len(model.PendingFiles):])
			if err != nil {
				return err
			}
			f.Val = v
		}
	}
	before := model.FileRefs(t, old)
	if len(before) == 0 {
		return nil
	}
	after := model.FileRefs(t, rec)
	for r := range before {
		if !after[r] {
			if err := w.dropFileContent(t, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolveFiles turns the pending input of column c into stored files: a
// file named by a known id (the file column's one file) keeps its content
// and settings unless the input changes them; other files are new.
func (w *writer) resolveFiles(t *model.Table, c *model.Column, recordID string, prev codec.Value, pending string) (codec.Value, error) {
	var items []model.FileInput
	if err := json.Unmarshal([]byte(pending), &items); err != nil {
		return codec.Value{}, err
	}
	tx := w.tx
	olds := model.StoredFiles(c, prev)
	byID := map[string]model.StoredFile{}
	for _, f := range olds {
		byID[f.ID] = f
	}
	out := make([]model.StoredFile, 0, len(items))
	for i, in := range items {
		var f model.StoredFile
		known := false
		switch {
		case c.Type == TypeFile && len(olds) > 0:
			f, known = olds[0], true
		case in.ID != "":
			f, known = byID[in.ID]
		}
		if !known {
			id := in.ID
			if id == "" {
				id = model.NewFileID(tx.d.id, tx.seq, recordID, c.ID, i)
			}
			f = model.NewStoredFile(c, id, tx.seq)
			f.Version = 1
		}
		f.Name = in.Name
		if in.MediaType != nil {
			f.MediaType = *in.MediaType
		}
		if in.Public != nil {
			f.Public = *in.Public
		}
		if in.Signed != nil {
			f.Signed = *in.Signed
		}
		if in.Upload != nil {
			f.Upload = *in.Upload
		}
		if in.Content != nil {
			data, err := model.DecodeBase64(*in.Content)
			if err != nil {
				return codec.Value{}, model.Invalidf("column [%s]: base64Content is not valid base64", c.Path)
			}
			if !known {
				f.Version = 0
			}
			f.SetContent(data, tx.seq)
			if err := files.PutContent(tx.batch, tx.d.id, w.br.Lineage[0].Layer, t.ID, c.ID, f.ID, tx.seq, data); err != nil {
				return codec.Value{}, err
			}
		}
		out = append(out, f)
	}
	return model.StoredValue(c, out), nil
}

// dropFileContent deletes a content from the branch's top layer when it is
// there and no fork of the layer may read it (it was written after the
// layer's newest fork point).
func (w *writer) dropFileContent(t *model.Table, r model.FileRef) error {
	if r.Size == 0 {
		return nil
	}
	tx := w.tx
	top := w.br.Lineage[0].Layer
	if forkSeq, forked := tx.state().forks[top]; forked && r.Seq <= forkSeq {
		return nil
	}
	first := codec.FileChunkKey(nil, tx.d.id, top, t.ID, r.Col, r.ID, r.Seq, 0)
	_, closer, err := tx.batch.Get(first)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil // written in a lower layer
	}
	if err != nil {
		return err
	}
	closer.Close()
	for i := int64(0); i*model.FileChunkSize < r.Size; i++ {
		if err := tx.batch.Delete(codec.FileChunkKey(nil, tx.d.id, top, t.ID, r.Col, r.ID, r.Seq, uint16(i)), nil); err != nil {
			return err
		}
	}
	return nil
}
