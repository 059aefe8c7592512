package layers

import (
	"encoding/binary"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/fts"
)

// Memberships lists the bitmap ids a record's row belongs to.
func Memberships(t *model.Table, rec *codec.Record) map[string]struct{} {
	out := map[string]struct{}{}
	AddMemberships(out, t, rec)
	return out
}

// AddMemberships adds the bitmap ids a record's row belongs to to out.
func AddMemberships(out map[string]struct{}, t *model.Table, rec *codec.Record) {
	out[string(codec.LiveBitmapID())] = struct{}{}
	for _, f := range rec.Fields {
		c := t.ByID[f.Col]
		if c == nil {
			continue
		}
		out[string(codec.ExistsBitmapID(c.ID))] = struct{}{}
		if fts.Searchable(c.Type) {
			textMemberships(out, c, f.Val)
		}
		if !c.Type.Indexed() {
			continue
		}
		if f.Val.Kind == codec.KindStrings {
			for _, s := range f.Val.Strs {
				id, _ := codec.PostingBitmapID(nil, c.ID, codec.String(s))
				out[string(id)] = struct{}{}
			}
			continue
		}
		id, err := codec.PostingBitmapID(nil, c.ID, f.Val)
		if err == nil {
			out[string(id)] = struct{}{}
		}
	}
}

// fieldPool recycles the analysis buffers of textMemberships.
var fieldPool = sync.Pool{New: func() any { return new(fts.Field) }}

// textMemberships adds the search bitmaps of one text field to out.
func textMemberships(out map[string]struct{}, c *model.Column, v codec.Value) {
	f := fieldPool.Get().(*fts.Field)
	defer fieldPool.Put(f)
	f.Reset()
	switch v.Kind {
	case codec.KindString:
		f.Add(v.Str)
	case codec.KindStrings:
		for _, s := range v.Strs {
			f.Add(s)
		}
	default:
		return
	}
	out[string(codec.LengthBitmapID(nil, c.ID, fts.LengthBucket(f.Words)))] = struct{}{}
	var buf []byte
	for term, n := range f.TF {
		buf = codec.TermBitmapID(buf[:0], c.ID, term)
		out[string(buf)] = struct{}{}
		for i, l := range fts.TFLevels {
			if n < int(l) {
				break
			}
			buf = codec.TermTFBitmapID(buf[:0], c.ID, uint8(i), term)
			out[string(buf)] = struct{}{}
		}
	}
}

// TermOf returns the word a term bitmap id names: 05 · col u32 · 40 ·
// escaped term · 00 01. Words hold no 00 byte, so the escaped form is the
// word itself and the result shares the id's memory.
func TermOf(bitmapID string) (string, bool) {
	n := len(bitmapID)
	if n < 8 || bitmapID[0] != codec.BitmapTerm || bitmapID[5] != 0x40 || bitmapID[n-2:] != "\x00\x01" {
		return "", false
	}
	term := bitmapID[6 : n-2]
	if strings.IndexByte(term, 0) >= 0 {
		v, _, err := codec.DecodeOrdered([]byte(bitmapID[5:]))
		if err != nil || v.Kind != codec.KindString {
			return "", false
		}
		return v.Str, true
	}
	return term, true
}

// LengthOf returns the column and bucket a length bitmap id names.
func LengthOf(bitmapID string) (col uint32, bucket uint8, ok bool) {
	if len(bitmapID) != 6 || bitmapID[0] != codec.BitmapLength {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32([]byte(bitmapID[1:5])), bitmapID[5], true
}

// WriteTermKeys writes the KindTerm keys of the term bitmaps among ids in
// a layer (flattening copies a vocabulary this way).
func WriteTermKeys(batch *pebble.Batch, db, layer, table uint32, ids []string) error {
	var kb []byte
	for _, id := range ids {
		if term, ok := TermOf(id); ok {
			kb = codec.TermKey(kb[:0], db, layer, table, term)
			if err := batch.Set(kb, nil, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// FieldLength is the length bucket of one text field of a written row.
type FieldLength struct {
	Col    uint32
	Bucket uint8
}

// FieldLengths picks the length bitmaps out of a row's memberships.
func FieldLengths(ids map[string]struct{}) []FieldLength {
	var out []FieldLength
	for id := range ids {
		if col, b, ok := LengthOf(id); ok {
			out = append(out, FieldLength{col, b})
		}
	}
	return out
}
