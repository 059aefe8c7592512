package layers

import (
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
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
		m := mergers.Get().(*bitmapValueMerger)
		if codec.IsCanonicalAddsDelta(value) {
			// Kept as it is until a second operand comes: a key
			// a compaction finds once (a chunk no write has touched
			// since the last compaction, more of them the larger the
			// store) keeps its bytes.
			m.one = append(m.one[:0], value...)
			return m, nil
		}
		if rows, ok := codec.AppendAddsDeltaRows(m.rows[:0], value); ok {
			// Reversed, as MergeOlder collects rows: the older
			// operands that mostly follow leave them decreasing.
			slices.Reverse(rows)
			m.rows = rows
			return m, nil
		}
		d, err := codec.DecodeDeltaStored(value)
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("engine: merge operand of key %x: %w", key, err)
		}
		m.acc = d
		return m, nil
	},
}

// mergers keeps the mergers of keys Pebble is done with, so that the
// slices their rows were collected in serve the next keys: a flush or a
// compaction merges every posting it writes, each with a merger of its
// own.
var mergers = sync.Pool{New: func() any { return new(bitmapValueMerger) }}

// Close hands m back to mergers once Pebble is done with the value Finish
// returned, which does not alias m. Pebble calls it at most once; a merger
// it never closes is left to the garbage collector.
func (m *bitmapValueMerger) Close() error {
	if cap(m.rows) > mergerMaxRows {
		m.rows = nil
	}
	*m = bitmapValueMerger{rows: m.rows[:0], one: m.one[:0]}
	mergers.Put(m)
	return nil
}

// mergerMaxRows bounds the rows a bitmapValueMerger collects before it
// folds them into its accumulator.
const mergerMaxRows = 1 << 16

// bitmapValueMerger composes the operands of one key as they arrive, newest
// or oldest first, into a single delta.
//
// Pebble hands it operands in one direction only: forward reads and
// compactions start from the newest and call MergeOlder, reverse reads start
// from the oldest and call MergeNewer. The oldest operand may be the value of
// a Set, which in this scheme is a Full delta; once acc is Full, older
// operands cannot change it.
//
// Most operands only add a few rows (one write batch's postings). Composing
// each of them with acc would cost a bitmap decode and a union per operand,
// so their rows are collected in rows instead and folded into acc
// at once as a single add-only delta: adjacent add-only operands commute, so
// their union composes to the same result. rows sit on the side of acc the
// operands came from (newer for MergeNewer, older for MergeOlder) and are
// folded before an operand of another kind or direction, and at Finish.
//
// The first operand, when it is the canonical encoding of the rows it
// adds (codec.IsCanonicalAddsDelta), is only copied into one: if no other
// operand follows, Finish writes those bytes back as they are, which is
// what folding it would write, and otherwise the next operand reads its
// rows (unpack).
type bitmapValueMerger struct {
	acc       codec.Delta
	rows      []uint32 // adds of add-only operands not yet folded into acc
	rowsNewer bool     // rows are newer than acc (came from MergeNewer)
	one       []byte   // the first operand, unread, while it is the only one
}

// unpack reads the rows of the operand kept in one into rows, as Merge
// reads an add-only operand, and empties one.
func (m *bitmapValueMerger) unpack() {
	if len(m.one) == 0 {
		return
	}
	rows, _ := codec.AppendAddsDeltaRows(m.rows[:0], m.one)
	slices.Reverse(rows)
	m.rows, m.one = rows, m.one[:0]
}

// MergeNewer composes value after everything merged so far.
func (m *bitmapValueMerger) MergeNewer(value []byte) error {
	m.unpack()
	if len(m.rows) > 0 && !m.rowsNewer || len(m.rows) >= mergerMaxRows {
		m.fold()
	}
	if rows, ok := codec.AppendAddsDeltaRows(m.rows, value); ok {
		m.rows, m.rowsNewer = rows, true
		return nil
	}
	newer, err := codec.DecodeDeltaStored(value)
	if err != nil {
		return fmt.Errorf("engine: newer merge operand: %w", err)
	}
	m.fold()
	m.acc.Then(newer)
	return nil
}

// MergeOlder composes value before everything merged so far.
func (m *bitmapValueMerger) MergeOlder(value []byte) error {
	m.unpack()
	if len(m.rows) > 0 && m.rowsNewer || len(m.rows) >= mergerMaxRows {
		m.fold()
	}
	if m.acc.Full {
		// Older operands cannot change acc: value is only checked, to
		// report corruption, and without a bitmap when it has the common
		// shape. rows is empty here: a Full acc absorbed them.
		if rows, ok := codec.AppendAddsDeltaRows(m.rows[:0], value); ok {
			m.rows = rows[:0]
			return nil
		}
		if _, err := codec.DecodeDeltaStored(value); err != nil {
			return fmt.Errorf("engine: older merge operand: %w", err)
		}
		return nil
	}
	if rows, ok := codec.AppendAddsDeltaRows(m.rows, value); ok {
		// Reversed, so that operands of rows growing with time, as
		// writes number them, leave rows in decreasing order.
		slices.Reverse(rows[len(m.rows):])
		m.rows, m.rowsNewer = rows, false
		return nil
	}
	older, err := codec.DecodeDeltaStored(value)
	if err != nil {
		return fmt.Errorf("engine: older merge operand: %w", err)
	}
	if older.Full && m.acc.Adds == nil && m.acc.Dels == nil && !m.acc.Full {
		// The base below a stack of add-only operands, as a compaction
		// into the bottom level finds a posting: the rows join the
		// base's set directly, without a bitmap of their own to build
		// and then union.
		m.sortRows()
		older.Adds.AddMany(m.rows)
		m.acc, m.rows = older, m.rows[:0]
		return nil
	}
	m.fold()
	m.acc.Before(older)
	return nil
}

// fold composes the collected rows, as one add-only delta, with acc on the
// side they came from, and empties rows.
func (m *bitmapValueMerger) fold() {
	if len(m.rows) == 0 {
		return
	}
	m.sortRows()
	adds := roaring.New()
	adds.AddMany(m.rows)
	d := codec.Delta{Adds: adds, Dels: roaring.New()}
	switch {
	case m.acc.Adds == nil && m.acc.Dels == nil && !m.acc.Full:
		m.acc = d // acc is the empty change
	case m.rowsNewer:
		m.acc.Then(d)
	default:
		m.acc.Before(d)
	}
	m.rows = m.rows[:0]
}

// Finish encodes the composed value. includesBase is true on every read and
// in compactions whose output becomes a Set (the merge reached a Set, a
// Delete, or the bottom of the LSM): the composed delta then applies to the
// empty set, so it is written Full, an empty set included. Otherwise (a
// compaction that read only the newer part of the key's history) older
// operands may lie below, so the result stays a delta, or Full if one of the
// operands was. The returned slice is freshly allocated and never changed.
func (m *bitmapValueMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	if len(m.one) > 0 {
		v := slices.Clone(m.one)
		if includesBase {
			v[0] = fullTag // as finishRows writes a Full value
			v = v[:len(v)-1]
		}
		return v, m, nil
	}
	if m.acc.Adds == nil && m.acc.Dels == nil && !m.acc.Full && len(m.rows) > 0 {
		return m.finishRows(includesBase), m, nil
	}
	m.fold()
	if includesBase && !m.acc.Full {
		m.acc.Full = true
		m.acc.Dels.Clear()
	}
	v := codec.AppendDelta(nil, m.acc)
	return v, m, nil
}

// sortRows sorts rows in increasing order: the order roaring adds them
// in fastest, appending to a container rather than inserting into it.
// Rows collected newest first are decreasing already when writes number
// them in order, and only need reversing. The callers empty rows after.
func (m *bitmapValueMerger) sortRows() {
	if !m.rowsNewer {
		slices.Reverse(m.rows)
	}
	if !slices.IsSorted(m.rows) {
		slices.Sort(m.rows)
	}
}

// finishRows encodes the composed value when every operand only added
// rows, as the operands a flush folds mostly do: it writes the rows
// straight into the value, without making a bitmap of them when they fit
// one container (codec.AppendAddsDelta). A bitmap key's rows share their
// high 16 bits, so they do unless they are too many.
func (m *bitmapValueMerger) finishRows(includesBase bool) []byte {
	m.sortRows()
	rows := slices.Compact(m.rows)
	// The longest encoding of up to a container's worth of rows: an
	// array of them after the tag, two lengths and a 16-byte header.
	v := codec.AppendAddsDelta(make([]byte, 0, 24+2*len(rows)), rows)
	m.rows = m.rows[:0]
	if includesBase {
		// A delta with no removals and the Full value of the same set
		// differ in their tag and the removals' empty length, its last
		// byte.
		v[0] = fullTag
		v = v[:len(v)-1]
	}
	return v
}

// fullTag is the leading byte of a Full value: the first of the empty
// set's encoding.
var fullTag = codec.AppendDelta(nil, codec.Delta{Full: true})[0]
