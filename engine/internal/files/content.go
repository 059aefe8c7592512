package files

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// PutContent writes the chunks of a file's content into a layer.
func PutContent(b *pebble.Batch, db, layer, table, col uint32, id string, seq uint64, data []byte) error {
	for i := 0; i*model.FileChunkSize < len(data); i++ {
		chunk := data[i*model.FileChunkSize : min((i+1)*model.FileChunkSize, len(data))]
		if err := b.Set(codec.FileChunkKey(nil, db, layer, table, col, id, seq, uint16(i)), chunk, nil); err != nil {
			return err
		}
	}
	return nil
}

// ReadContent reads the content of a stored file: from the first layer
// of the lineage that holds it (content keys are written once, see
// codec/KEYS.md).
func ReadContent(r pebble.Reader, db uint32, lin model.Lineage, table, col uint32, f *model.StoredFile) ([]byte, error) {
	if f.Size == 0 {
		return []byte{}, nil
	}
	out := make([]byte, 0, f.Size)
	for _, lr := range lin {
		prefix := codec.FileContentPrefix(nil, db, lr.Layer, table, col, f.ID, f.Seq)
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
		if err != nil {
			return nil, err
		}
		for ok := it.First(); ok; ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return nil, err
			}
			out = append(out, v...)
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
		if len(out) > 0 {
			break
		}
	}
	if int64(len(out)) != f.Size {
		return nil, errors.New("engine: file content missing or truncated")
	}
	return out, nil
}

// CopyContents copies into layer the content of every file rec names,
// read from the lineage lin: flattening a lineage keeps the bytes its
// records name.
func CopyContents(r pebble.Reader, b *pebble.Batch, db uint32, lin model.Lineage, layer uint32, t *model.Table, rec *codec.Record) error {
	for ref := range model.FileRefs(t, rec) {
		if ref.Size == 0 {
			continue
		}
		f := model.StoredFile{ID: ref.ID, Seq: ref.Seq, Size: ref.Size}
		data, err := ReadContent(r, db, lin, t.ID, ref.Col, &f)
		if err != nil {
			return err
		}
		if err := PutContent(b, db, layer, t.ID, ref.Col, ref.ID, ref.Seq, data); err != nil {
			return err
		}
	}
	return nil
}
