package layers

import (
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
)

// bitmapMerger is the Pebble merge operator for bitmap keys. Writers Merge
// codec.Delta values blind; Pebble folds them with bitmapValueMerger during
// reads and compactions. Its Name is stored by Pebble and checked on open, so
// a change to the merge semantics or the value format takes a new name.
//
// Contract for bitmap keys:
//   - Write them with Merge. To replace a whole set, Merge a Full delta; to
//     drop a key, Delete or DeleteRange it. A Set works too: Pebble hands its
//     value to MergeOlder as the oldest operand, so it should be Full.
//   - Reads (Get, iterators in either direction) always fold down to the base
//     and see a Full value.
//   - A key whose set becomes empty keeps an empty Full value (2 bytes) and
//     reads as the empty set, not as absent. bitmapValueMerger deliberately
//     does not implement pebble.DeletableValueMerger: in Pebble v2.1.x a
//     compaction that drops a merge result corrupts its iterator state,
//     panicking or resurrecting the Set the merge consumed
//     (cockroachdb/pebble#6168).
var Merger = &pebble.Merger{
	Name: "coppice.bitmap.v1",
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		d, err := codec.DecodeDeltaStored(value)
		if err != nil {
			return nil, fmt.Errorf("engine: merge operand of key %x: %w", key, err)
		}
		return &bitmapValueMerger{acc: d}, nil
	},
}

// bitmapValueMerger composes the operands of one key as they arrive, newest
// or oldest first, into a single delta.
//
// Pebble hands it operands in one direction only: forward reads and
// compactions start from the newest and call MergeOlder, reverse reads start
// from the oldest and call MergeNewer. The oldest operand may be the value of
// a Set, which in this scheme is a Full delta; once acc is Full, older
// operands cannot change it.
type bitmapValueMerger struct {
	acc codec.Delta
}

// MergeNewer composes value after everything merged so far.
func (m *bitmapValueMerger) MergeNewer(value []byte) error {
	newer, err := codec.DecodeDeltaStored(value)
	if err != nil {
		return fmt.Errorf("engine: newer merge operand: %w", err)
	}
	m.acc.Then(newer)
	return nil
}

// MergeOlder composes value before everything merged so far.
func (m *bitmapValueMerger) MergeOlder(value []byte) error {
	older, err := codec.DecodeDeltaStored(value)
	if err != nil {
		return fmt.Errorf("engine: older merge operand: %w", err)
	}
	if m.acc.Full {
		return nil // decoded only to report corruption
	}
	m.acc.Before(older)
	return nil
}

// Finish encodes the composed value. includesBase is true on every read and
// in compactions whose output becomes a Set (the merge reached a Set, a
// Delete, or the bottom of the LSM): the composed delta then applies to the
// empty set, so it is written Full, an empty set included. Otherwise (a
// compaction that read only the newer part of the key's history) older
// operands may lie below, so the result stays a delta, or Full if one of the
// operands was. The returned slice is freshly allocated and never changed.
func (m *bitmapValueMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	if includesBase && !m.acc.Full {
		m.acc.Full = true
		m.acc.Dels.Clear()
	}
	return codec.AppendDelta(nil, m.acc), nil, nil
}
