package apply

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/files"
	"github.com/coppice-db/coppice/engine/internal/layers"
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
		case c.Type == model.TypeFile && len(olds) > 0:
			f, known = olds[0], true
		case in.ID != "":
			f, known = byID[in.ID]
		}
		if !known {
			id := in.ID
			if id == "" {
				id = model.NewFileID(tx.d.ID, tx.seq, recordID, c.ID, i)
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
			if err := files.PutContent(tx.batch, tx.d.ID, w.br.Lineage[0].Layer, t.ID, c.ID, f.ID, tx.seq, data); err != nil {
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
	if forkSeq, forked := tx.state().Fork(top); forked && r.Seq <= forkSeq {
		return nil
	}
	first := codec.FileChunkKey(nil, tx.d.ID, top, t.ID, r.Col, r.ID, r.Seq, 0)
	_, closer, err := tx.batch.Get(first)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil // written in a lower layer
	}
	if err != nil {
		return err
	}
	closer.Close()
	for i := int64(0); i*model.FileChunkSize < r.Size; i++ {
		if err := tx.batch.Delete(codec.FileChunkKey(nil, tx.d.ID, top, t.ID, r.Col, r.ID, r.Seq, uint16(i)), nil); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile stores (Put) or deletes one file of a record: the binary file
// endpoints. MediaType, already checked, is "" to keep the stored one;
// RequireID, when set, is the id the selected file must have (upload URLs
// name a file, which must still exist). The result is a *FileWritten.
type WriteFile struct {
	Branch    string           `json:"branch"`
	Target    model.FileTarget `json:"target"`
	Put       bool             `json:"put,omitempty"`
	Content   []byte           `json:"content,omitempty"`
	MediaType string           `json:"mediaType,omitempty"`
	RequireID string           `json:"requireID,omitempty"`
	Now       time.Time        `json:"now"`
}

// FileWritten is the result of a WriteFile: the file as stored (before
// its deletion, for a delete), whether the write created it, and where it
// is, by ids and, for the caller in this process, as the schema objects.
type FileWritten struct {
	File                  model.StoredFile
	Created               bool
	Branch, Table, Column uint32

	// Br, Tbl and Col are the schema objects of the place, for the caller
	// in this process; a decoded result has none.
	Br  *model.Branch `json:"-"`
	Tbl *model.Table  `json:"-"`
	Col *model.Column `json:"-"`
}

func (cmd *WriteFile) apply(tx *Tx) (any, error) {
	tg, d := cmd.Target, tx.d
	b, err := tx.st.Branch(cmd.Branch)
	if err != nil {
		return nil, err
	}
	t, err := b.Schema.Table(tg.Table)
	if err != nil {
		return nil, err
	}
	c, err := files.FileColumn(t, tg.Column)
	if err != nil {
		return nil, err
	}
	ent, _, exists, err := d.IDs.LookupID(tx.batch, d.ID, b.Lineage, t.ID, tg.Record)
	if err != nil {
		return nil, err
	}
	var old codec.Record
	level := -1
	if exists {
		if level, exists, err = layers.ReadRow(tx.batch, d.ID, b.Lineage, t.ID, ent.Row, &old); err != nil {
			return nil, err
		}
	}
	if !exists {
		return nil, model.NotFoundf("record [%s] not found", tg.Record)
	}
	v, _ := old.Get(c.ID)
	stored := model.StoredFiles(c, v)
	i, err := files.PickFile(c, stored, tg)
	if err != nil {
		return nil, err
	}
	if cmd.RequireID != "" && (i < 0 || stored[i].ID != cmd.RequireID) {
		return nil, model.NotFoundf("file not found")
	}
	out := &FileWritten{Branch: b.ID, Table: t.ID, Column: c.ID, Br: b, Tbl: t, Col: c}
	switch {
	case !cmd.Put && i < 0 && c.Type == model.TypeFile:
		return nil, model.NotFoundf("column [%s] has no file", c.Path)
	case !cmd.Put && i < 0 && tg.FileID == "":
		return nil, model.Invalidf("column [%s] is a file[] column: name an item with .../file/{fileId}", c.Path)
	case !cmd.Put && i < 0:
		return nil, model.NotFoundf("file [%s] not found", tg.FileID)
	case !cmd.Put:
		out.File = stored[i]
		stored = append(stored[:i:i], stored[i+1:]...)
	default:
		if i < 0 {
			id := tg.FileID
			if c.Type == model.TypeFile || id == "" {
				id = model.NewFileID(d.ID, tx.seq, tg.Record, c.ID, len(stored))
			} else if !model.ValidFileID(id) {
				return nil, model.Invalidf("invalid file id [%s]", id)
			}
			if len(stored) >= model.MaxFileItems {
				return nil, model.Invalidf("column [%s]: a file[] value holds at most %d files", c.Path, model.MaxFileItems)
			}
			stored = append(stored, model.NewStoredFile(c, id, tx.seq))
			i, out.Created = len(stored)-1, true
		}
		f := &stored[i]
		if cmd.MediaType != "" {
			f.MediaType = cmd.MediaType
		}
		f.SetContent(cmd.Content, tx.seq)
		if err := files.PutContent(tx.batch, d.ID, b.Lineage[0].Layer, t.ID, c.ID, f.ID, tx.seq, cmd.Content); err != nil {
			return nil, err
		}
		out.File = *f
	}
	rec := old.Clone()
	rec.Seq, rec.Version, rec.UpdatedAt = tx.seq, old.Version+1, cmd.Now.UnixNano()
	rec.Set(c.ID, model.StoredValue(c, stored))
	w := &writer{tx: tx, br: b, now: cmd.Now}
	if _, err := w.finishWrite(t, OpResult{}, ent.Row, &old, level, rec); err != nil {
		return nil, err
	}
	return out, nil
}
