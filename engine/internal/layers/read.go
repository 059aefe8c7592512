package layers

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
	"sort"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// This file holds the two versioned structures every layer is made of, and
// how a branch composes them across its lineage (DESIGN.md §4).
//
// A branch is a lineage of layers: its own writable top layer, then frozen
// views of its ancestors' layers, each at the commit sequence number at which
// the fork happened. A parent keeps writing into its own single layer; for the
// rows it changes after a fork it keeps the versions its children still see:
//
//   - Versioned keys (records, id map): the current version sits under a
//     "cur" key; when a write replaces a version that some live fork may see
//     (its seq ≤ the layer's newest fork point), that version moves to a
//     "hist" key suffixed by its inverted seq. Reading a layer at seq s takes
//     the current version if it was written at or before s, else the newest
//     hist version at or before s, else nothing (fall through to the next
//     layer down).
//   - Bitmaps (live rows, mask, not-null, postings): the current set is
//     maintained with blind deltas through the bitmap merger; while a layer
//     has forks, every commit also logs its exact delta under a hist key.
//     Reading at s takes the current set and undoes the logged deltas newer
//     than s.
//
// Main therefore reads one key per record and one bitmap per posting however
// many children it has; children pay for the parent's churn since their fork.

// GetVersion reads the version of a versioned key visible in a layer at seq
// s and calls use with it. found is false when the layer holds no version
// at s (use is not called). The value use is given is the storage
// engine's: valid only until use returns, so that a large value a decoder
// copies anyway is not copied before it. histPrefix is not read when s is
// MaxSeq.
func GetVersion(r pebble.Reader, curKey, histPrefix []byte, s uint64, seqOf func([]byte) (uint64, error), use func(val []byte) error) (found bool, err error) {
	v, closer, err := r.Get(curKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer closer.Close()
	if s != model.MaxSeq {
		seq, err := seqOf(v)
		if err != nil {
			return false, err
		}
		if seq > s {
			return getHist(r, histPrefix, s, use)
		}
	}
	return true, use(v)
}

// getHist reads the newest hist version of a key at or before seq s.
func getHist(r pebble.Reader, histPrefix []byte, s uint64, use func(val []byte) error) (bool, error) {
	seek := codec.AppendU64(bytes.Clone(histPrefix), ^s)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: seek, UpperBound: codec.PrefixEnd(histPrefix)})
	if err != nil {
		return false, err
	}
	defer it.Close()
	if !it.First() {
		return false, it.Error()
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return false, err
	}
	return true, use(v)
}

// IDEntry is the value of an id-map key: the row a record id names, the
// commit that wrote the mapping, and whether it is a tombstone.
type IDEntry struct {
	Row     uint32
	Seq     uint64
	Deleted bool
}

// EncodeIDEntry is the 13-byte value of an id-map key: row u32, seq u64,
// tombstone flag.
func EncodeIDEntry(e IDEntry) []byte {
	b := make([]byte, 13)
	binary.BigEndian.PutUint32(b, e.Row)
	binary.BigEndian.PutUint64(b[4:], e.Seq)
	if e.Deleted {
		b[12] = 1
	}
	return b
}

// DecodeIDEntry reads the value EncodeIDEntry writes, rejecting any other.
func DecodeIDEntry(b []byte) (IDEntry, error) {
	if len(b) != 13 || b[12] > 1 {
		return IDEntry{}, errors.New("engine: malformed id map entry")
	}
	return IDEntry{Row: binary.BigEndian.Uint32(b), Seq: binary.BigEndian.Uint64(b[4:]), Deleted: b[12] == 1}, nil
}

// idEntrySeq is the seq of an id-map value, for GetVersion.
func idEntrySeq(b []byte) (uint64, error) {
	e, err := DecodeIDEntry(b)
	return e.Seq, err
}

// idKeySize is room for a record key, and for an id-map key but its id:
// the table prefix, a row or a separator, and a history seq.
const idKeySize = 32

// LookupID resolves a record id to its row in a branch. level is the lineage
// index of the layer holding the mapping (a tombstone for a deleted
// record), -1 when no layer holds one. ok is false when the record does
// not exist (never written, or deleted).
func LookupID(r pebble.Reader, db uint32, lin model.Lineage, tableID uint32, id string) (e IDEntry, level int, ok bool, err error) {
	return lookupID(r, db, lin, tableID, id, nil)
}

// lookupID is LookupID, reading only the layers for which mayHold, when
// not nil, says the layer may hold an id-map key of id.
func lookupID(r pebble.Reader, db uint32, lin model.Lineage, tableID uint32, id string, mayHold func(layer uint32) (bool, error)) (e IDEntry, level int, ok bool, err error) {
	kp := keyBufs.Get().(*[]byte) // one buffer for every layer's key
	kb := *kp
	defer func() { *kp = kb[:0]; keyBufs.Put(kp) }()
	for i, lr := range lin {
		if mayHold != nil {
			may, err := mayHold(lr.Layer)
			if err != nil {
				return IDEntry{}, 0, false, err
			}
			if !may {
				continue
			}
		}
		kb = codec.IDMapKey(kb[:0], db, lr.Layer, tableID, id)
		var hp []byte // the top layer (maxSeq) reads no history
		if lr.Seq != model.MaxSeq {
			hp = codec.IDMapHistKey(nil, db, lr.Layer, tableID, id, 0)
			hp = hp[:len(hp)-8]
		}
		var e IDEntry
		found, err := GetVersion(r, kb, hp, lr.Seq, idEntrySeq, func(v []byte) (err error) {
			e, err = DecodeIDEntry(v)
			return err
		})
		if err != nil {
			return IDEntry{}, 0, false, err
		}
		if !found {
			continue
		}
		if e.Deleted {
			return IDEntry{}, i, false, nil
		}
		return e, i, true, nil
	}
	return IDEntry{}, -1, false, nil
}

// ReadRow reads the visible version of a row in a branch. level is the
// lineage index of the layer it came from. ok is false for a deleted or
// unknown row.
func ReadRow(r pebble.Reader, db uint32, lin model.Lineage, tableID, row uint32, rec *codec.Record) (level int, ok bool, err error) {
	return ReadRowWith(r, db, lin, tableID, row, rec, codec.DecodeRecord)
}

// ReadRowShared reads a row as ReadRow does, decoded by
// codec.DecodeRecordShared: for a record read to be answered or kept
// whole, whose strings share one copy.
func ReadRowShared(r pebble.Reader, db uint32, lin model.Lineage, tableID, row uint32, rec *codec.Record) (level int, ok bool, err error) {
	return ReadRowWith(r, db, lin, tableID, row, rec, codec.DecodeRecordShared)
}

// keyBufs recycles the buffers point reads build their keys in: a key
// given to the storage engine escapes, and a read would allocate one.
var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2*idKeySize); return &b }}

// ReadRowWith reads a row as ReadRow does, with the record decoder given:
// decode is called with the stored version, valid only until it returns,
// and with rec; ok is !rec.Deleted after it. An error of decode ends the
// read with that error.
func ReadRowWith(r pebble.Reader, db uint32, lin model.Lineage, tableID, row uint32, rec *codec.Record, decode func([]byte, *codec.Record) error) (level int, ok bool, err error) {
	kp := keyBufs.Get().(*[]byte) // one buffer for every layer's key
	kb := *kp
	defer func() { *kp = kb[:0]; keyBufs.Put(kp) }()
	for i, lr := range lin {
		kb = codec.RecordKey(kb[:0], db, lr.Layer, tableID, row)
		var hp []byte // the top layer (maxSeq) reads no history
		if lr.Seq != model.MaxSeq {
			hp = codec.RecordHistKey(nil, db, lr.Layer, tableID, row, 0)
			hp = hp[:len(hp)-8]
		}
		// The record decoder copies what it keeps: the value is read where
		// it lies.
		found, err := GetVersion(r, kb, hp, lr.Seq, codec.RecordSeq, func(v []byte) error { return decode(v, rec) })
		if err != nil {
			return 0, false, err
		}
		if !found {
			continue
		}
		return i, !rec.Deleted, nil
	}
	return 0, false, nil
}

// ReadRows reads the visible versions of rows of a branch, as ReadRow does
// for each, and calls fn with the index in rows of each row found live, in
// ascending row order. The rows of the branch's own layer (the top of the
// lineage, read without history) are read with one iterator seeking
// forward, which costs less than a point read per row; rows it does not
// hold are read one by one from the layers below. rec is reused between
// calls of fn; the records are decoded by codec.DecodeRecordShared, for
// pages that are answered or kept whole.
func ReadRows(r pebble.Reader, db uint32, lin model.Lineage, tableID uint32, rows []uint32, fn func(i int, rec *codec.Record) error) error {
	if len(rows) == 0 || len(lin) == 0 {
		return nil
	}
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(rows[a], rows[b]) })
	var rec codec.Record
	rest := lin
	top := lin[0]
	var it *pebble.Iterator
	if top.Seq == model.MaxSeq {
		rest = lin[1:]
		lo := codec.RecordKey(nil, db, top.Layer, tableID, rows[order[0]])
		hi := codec.RecordKey(nil, db, top.Layer, tableID, rows[order[len(order)-1]])
		var err error
		if it, err = r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: codec.PrefixEnd(hi)}); err != nil {
			return err
		}
		defer it.Close()
	}
	var kb []byte
	for _, i := range order {
		if it != nil {
			kb = codec.RecordKey(kb[:0], db, top.Layer, tableID, rows[i])
			if it.SeekGE(kb) && bytes.Equal(it.Key(), kb) {
				v, err := it.ValueAndErr()
				if err != nil {
					return err
				}
				if err := codec.DecodeRecordShared(v, &rec); err != nil {
					return err
				}
				if rec.Deleted {
					continue
				}
				if err := fn(i, &rec); err != nil {
					return err
				}
				continue
			}
			if err := it.Error(); err != nil {
				return err
			}
		}
		_, ok, err := ReadRowShared(r, db, rest, tableID, rows[i], &rec)
		if err != nil {
			return err
		}
		if ok {
			if err := fn(i, &rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadLayerBitmap reads one bitmap of one layer as of seq s. pending, when
// not nil, holds deltas of the current write not yet in r; they apply to
// the top layer only (s == MaxSeq).
func ReadLayerBitmap(r pebble.Reader, db uint32, lr model.LayerRef, tableID uint32, bitmapID []byte, pending *Pending) (*roaring.Bitmap, error) {
	set := roaring.New()
	prefix := codec.BitmapPrefix(nil, db, lr.Layer, codec.KindBitmapCur, tableID, bitmapID)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if len(it.Key()) != len(prefix)+2 {
			continue // a longer bitmap id sharing this prefix
		}
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return nil, err
		}
		b, err := codec.DecodeBitmapStored(v)
		if err != nil {
			it.Close()
			return nil, err
		}
		set.Or(b)
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	if pb := pending.get(lr.Layer, tableID, bitmapID); pb != nil && lr.Seq == model.MaxSeq {
		pb.applyTo(set)
	}
	if lr.Seq == model.MaxSeq {
		return set, nil
	}
	// Undo the logged deltas newer than s, newest first.
	hprefix := codec.BitmapPrefix(nil, db, lr.Layer, codec.KindBitmapHist, tableID, bitmapID)
	it, err = r.NewIter(&pebble.IterOptions{LowerBound: hprefix, UpperBound: codec.PrefixEnd(hprefix)})
	if err != nil {
		return nil, err
	}
	type logged struct {
		seq uint64
		d   codec.Delta
	}
	var log []logged
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != len(hprefix)+10 {
			continue
		}
		_, seq, err := codec.ParseHistSeq(k)
		if err != nil || seq <= lr.Seq {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return nil, err
		}
		d, err := codec.DecodeDeltaStored(v)
		if err != nil {
			it.Close()
			return nil, err
		}
		log = append(log, logged{seq, d})
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	// Undo newest first. Deltas of one commit touch disjoint chunks, so only
	// the order across commits matters.
	sort.SliceStable(log, func(i, j int) bool { return log[i].seq < log[j].seq })
	for i := len(log) - 1; i >= 0; i-- {
		log[i].d.UndoFrom(set)
	}
	return set, nil
}

// ReadBitmap composes one bitmap of a table across a branch's lineage:
// bottom-up, acc = (acc − mask_i) ∪ own_i.
func ReadBitmap(r pebble.Reader, db uint32, lin model.Lineage, tableID uint32, bitmapID []byte, pending *Pending) (*roaring.Bitmap, error) {
	acc, err := ReadLayerBitmap(r, db, lin[len(lin)-1], tableID, bitmapID, pending)
	if err != nil {
		return nil, err
	}
	mask := codec.MaskBitmapID()
	for i := len(lin) - 2; i >= 0; i-- {
		m, err := ReadLayerBitmap(r, db, lin[i], tableID, mask, pending)
		if err != nil {
			return nil, err
		}
		own, err := ReadLayerBitmap(r, db, lin[i], tableID, bitmapID, pending)
		if err != nil {
			return nil, err
		}
		acc.AndNot(m)
		acc.Or(own)
	}
	return acc, nil
}
