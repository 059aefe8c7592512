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
	VisitMemberships(t, rec, func(id []byte, _ string) { out[string(id)] = struct{}{} })
}

// VisitMemberships calls fn with each bitmap id a record's row belongs
// to, without building a set: the id is fn's only for the call, and an id
// may come more than once (a value repeated in a multiple). term is the
// word a term bitmap names (TermOf), "" for every other bitmap. Writers of
// new rows stage their postings this way, one call per (row, bitmap).
func VisitMemberships(t *model.Table, rec *codec.Record, fn func(id []byte, term string)) {
	Visit(t, rec, &idVisitor{fn: fn})
}

// A Visitor is told of the bitmaps a record's row belongs to (Visit): of
// the words of its text apart, so that a writer gathering the postings of
// many records looks each word up once, by the word, rather than each of
// its bitmaps by id.
type Visitor interface {
	// Bitmap is a bitmap that names no word. id is the visitor's only for
	// the call, and may come more than once (a value repeated in a
	// multiple).
	Bitmap(id []byte)
	// Word is a word text column col holds n times (n ≥ 1), once per
	// column: the row is in its term bitmap (TermBitmapID) and in the
	// frequency bitmaps (TermTFBitmapID) of the TFLevels n reaches. term
	// is a string of its own or part of the record's text: the visitor
	// may keep it.
	Word(col uint32, term string, n int)
}

// A TokenVisitor is a Visitor told of the words of a text field as they
// come rather than counted (Words): a writer that looks each word up
// anyway counts them itself, without a map of its own per field.
type TokenVisitor interface {
	Visitor
	// Tokens are the words of text column col, in order, repeats
	// included: for each distinct word, the row is in the bitmaps Word
	// names for it and its count. The tokens are the visitor's only for
	// the call; their Term strings it may keep.
	Tokens(col uint32, toks []fts.Token)
}

// Visit tells v of each bitmap rec's row belongs to in table t.
func Visit(t *model.Table, rec *codec.Record, v Visitor) {
	var arr [64]byte
	buf := append(arr[:0], codec.BitmapLive)
	v.Bitmap(buf)
	for _, f := range rec.Fields {
		c := t.ByID[f.Col]
		if c == nil {
			continue
		}
		buf = codec.AppendU32(append(buf[:0], codec.BitmapExists), c.ID)
		v.Bitmap(buf)
		if fts.Searchable(c.Type) {
			buf = visitText(buf, c, f.Val, v)
		}
		if !c.Type.Indexed() {
			continue
		}
		if f.Val.Kind == codec.KindStrings {
			for _, s := range f.Val.Strs {
				buf, _ = codec.PostingBitmapID(buf[:0], c.ID, codec.String(s))
				v.Bitmap(buf)
			}
			continue
		}
		var err error
		if buf, err = codec.PostingBitmapID(buf[:0], c.ID, f.Val); err == nil {
			v.Bitmap(buf)
		}
	}
}

// fieldPool recycles the analysis buffers of visitText.
var fieldPool = sync.Pool{New: func() any { return new(fts.Field) }}

// visitText tells v of the search bitmaps of one text field, using buf as
// scratch, and returns it.
func visitText(buf []byte, c *model.Column, val codec.Value, v Visitor) []byte {
	if tv, ok := v.(TokenVisitor); ok {
		return visitTokens(buf, c, val, tv)
	}
	f := fieldPool.Get().(*fts.Field)
	defer fieldPool.Put(f)
	f.Reset()
	switch val.Kind {
	case codec.KindString:
		f.Add(val.Str)
	case codec.KindStrings:
		for _, s := range val.Strs {
			f.Add(s)
		}
	default:
		return buf
	}
	buf = codec.LengthBitmapID(buf[:0], c.ID, fts.LengthBucket(f.Words))
	v.Bitmap(buf)
	for term, n := range f.TF {
		v.Word(c.ID, term, n)
	}
	return buf
}

// tokensPool recycles the token lists of visitTokens.
var tokensPool = sync.Pool{New: func() any { return new([]fts.Token) }}

// visitTokens is visitText for a TokenVisitor.
func visitTokens(buf []byte, c *model.Column, val codec.Value, v TokenVisitor) []byte {
	tp := tokensPool.Get().(*[]fts.Token)
	defer tokensPool.Put(tp)
	toks := (*tp)[:0]
	switch val.Kind {
	case codec.KindString:
		toks = fts.AppendTokens(toks, val.Str)
	case codec.KindStrings:
		for _, s := range val.Strs {
			toks = fts.AppendTokens(toks, s)
		}
	default:
		return buf
	}
	*tp = toks
	buf = codec.LengthBitmapID(buf[:0], c.ID, fts.LengthBucket(len(toks)))
	v.Bitmap(buf)
	v.Tokens(c.ID, toks)
	return buf
}

// idVisitor is a Visitor that names every bitmap by its id, a word's
// included (VisitMemberships).
type idVisitor struct {
	fn  func(id []byte, term string)
	buf []byte
}

func (v *idVisitor) Bitmap(id []byte) { v.fn(id, "") }

func (v *idVisitor) Word(col uint32, term string, n int) {
	v.buf = codec.TermBitmapID(v.buf[:0], col, term)
	v.fn(v.buf, term)
	for i, l := range fts.TFLevels {
		if n < int(l) {
			break
		}
		v.buf = codec.TermTFBitmapID(v.buf[:0], col, uint8(i), term)
		v.fn(v.buf, "")
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

// LengthOfID is LengthOf of an id as bytes.
func LengthOfID(id []byte) (FieldLength, bool) {
	if len(id) != 6 || id[0] != codec.BitmapLength {
		return FieldLength{}, false
	}
	return FieldLength{binary.BigEndian.Uint32(id[1:5]), id[5]}, true
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
