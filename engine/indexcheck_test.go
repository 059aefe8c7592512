package engine

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/fts"
)

// TestIndexStructures checks index maintenance against the records: after
// random writes, forks and branch deletions, the live, not-null and posting
// bitmaps composed across each branch's lineage must hold exactly the rows
// of the records that qualify, as the model holds them.
func TestIndexStructures(t *testing.T) {
	n := 12000
	if testing.Short() {
		n = 3000
	}
	m := newModelRun(t)
	// run checks every branch's indexes every 500 operations and at the end.
	m.run(n, 500)
	t.Logf("seed %d, flatten depth %d, rows from %d: %d operations, %d index checks", m.seed, m.depth, m.rowBase, n, m.stats["index check"])
}

// modelCodecValues returns the values a column value of the model is
// indexed under: one per element of a multiple column, else one.
func modelCodecValues(col string, v any) []codec.Value {
	switch x := v.(type) {
	case string:
		return []codec.Value{codec.String(x)}
	case int64:
		return []codec.Value{codec.Int(x)}
	case float64:
		return []codec.Value{codec.Float(x)}
	case []string:
		out := make([]codec.Value, len(x))
		for i, s := range x {
			out[i] = codec.String(s)
		}
		return out
	}
	panic(fmt.Sprintf("model: unexpected value %T in column %s", v, col))
}

// describeBitmapID names a bitmap id of a table for failure messages.
func describeBitmapID(t *model.Table, id []byte) string {
	colName := func(b []byte) string {
		if len(b) < 4 {
			return fmt.Sprintf("malformed %x", b)
		}
		col := binary.BigEndian.Uint32(b)
		if c := t.ByID[col]; c != nil {
			return c.Path
		}
		return fmt.Sprintf("unknown column %d", col)
	}
	switch {
	case len(id) == 1 && id[0] == codec.BitmapLive:
		return "live"
	case len(id) == 1 && id[0] == codec.BitmapMask:
		return "mask"
	case len(id) == 5 && id[0] == codec.BitmapExists:
		return "exists(" + colName(id[1:]) + ")"
	case len(id) > 5 && id[0] == codec.BitmapPosting:
		v, rest, err := codec.DecodeOrdered(id[5:])
		if err != nil || len(rest) > 0 {
			return fmt.Sprintf("posting(%s, malformed value %x)", colName(id[1:]), id[5:])
		}
		return fmt.Sprintf("posting(%s = %s)", colName(id[1:]), describeValue(v))
	case len(id) > 5 && id[0] == codec.BitmapTerm:
		v, rest, _ := codec.DecodeOrdered(id[5:])
		if len(rest) == 1 {
			return fmt.Sprintf("tf(%s, %q) ≥ level %d", colName(id[1:]), v.Str, rest[0])
		}
		return fmt.Sprintf("term(%s, %q)", colName(id[1:]), v.Str)
	case len(id) == 6 && id[0] == codec.BitmapLength:
		return fmt.Sprintf("length(%s) bucket %d", colName(id[1:]), id[5])
	}
	return fmt.Sprintf("malformed bitmap id %x", id)
}

// modelTextBitmaps returns the search bitmaps a text value of the model
// belongs to, counted here from the analyzer's tokens.
func modelTextBitmaps(col uint32, v any) [][]byte {
	var texts []string
	switch x := v.(type) {
	case string:
		texts = []string{x}
	case []string:
		texts = x
	default:
		return nil
	}
	tf := map[string]int{}
	words := 0
	for _, s := range texts {
		for _, tok := range fts.Tokenize(s) {
			tf[tok.Term]++
			words++
		}
	}
	out := [][]byte{codec.LengthBitmapID(nil, col, fts.LengthBucket(words))}
	for term, n := range tf {
		out = append(out, codec.TermBitmapID(nil, col, term))
		for i, level := range fts.TFLevels {
			if n >= int(level) {
				out = append(out, codec.TermTFBitmapID(nil, col, uint8(i), term))
			}
		}
	}
	return out
}

// storedTerms lists the vocabulary keys of a table across a lineage.
func storedTerms(r pebble.Reader, db uint32, lin model.Lineage, tableID uint32) (map[string]bool, error) {
	out := map[string]bool{}
	for _, lr := range lin {
		prefix := codec.TablePrefix(nil, db, lr.Layer, codec.KindTerm, tableID)
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
		if err != nil {
			return nil, err
		}
		for ok := it.First(); ok; ok = it.Next() {
			out[string(it.Key()[len(prefix):])] = true
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func describeValue(v codec.Value) string {
	switch v.Kind {
	case codec.KindString:
		return fmt.Sprintf("%q", v.Str)
	case codec.KindInt:
		return fmt.Sprint(v.Int)
	case codec.KindFloat:
		return fmt.Sprint(v.Float)
	}
	return fmt.Sprintf("%v", v)
}

// storedBitmapIDs lists the ids of the bitmaps some layer of a lineage holds
// for a table (current chunks, masks excluded), read with the same key
// functions the engine writes with.
func storedBitmapIDs(r pebble.Reader, db uint32, lin model.Lineage, tableID uint32) (map[string]bool, error) {
	out := map[string]bool{}
	for _, lr := range lin {
		prefix := codec.TablePrefix(nil, db, lr.Layer, codec.KindBitmapCur, tableID)
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
		if err != nil {
			return nil, err
		}
		for ok := it.First(); ok; ok = it.Next() {
			dk, err := codec.ParseDataKey(it.Key())
			var id []byte
			if err == nil {
				id = dk.Rest[:len(dk.Rest)-2]
			}
			if err != nil {
				it.Close()
				return nil, fmt.Errorf("layer %d: bitmap key %x: %v", lr.Layer, it.Key(), err)
			}
			if len(id) == 1 && id[0] == codec.BitmapMask {
				continue
			}
			out[string(id)] = true
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkTableIndexes composes, across a branch's lineage, the live bitmap,
// the not-null bitmap of every column and the posting of every value that
// the model's records hold or that some layer stores, and compares each with
// the rows of the model's records of the table that qualify. Row ids come
// from the branch's id map.
func checkTableIndexes(db *testDB, branch, tableName string, want map[string]*modelRecord) error {
	d, b, err := db.branchState(branch)
	if err != nil {
		return err
	}
	t, err := b.Schema.Table(tableName)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	sort.Strings(ids)

	expected := map[string]*roaring.Bitmap{}
	add := func(bitmapID []byte, row uint32) {
		s := expected[string(bitmapID)]
		if s == nil {
			s = roaring.New()
			expected[string(bitmapID)] = s
		}
		s.Add(row)
	}
	holder := map[uint32]string{}
	for _, id := range ids {
		ent, _, ok, err := layers.LookupID(db.e.pdb, d.ID, b.Lineage, t.ID, id)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("record %s has no row in the id map", id)
		}
		if other, dup := holder[ent.Row]; dup {
			return fmt.Errorf("records %s and %s both map to row %d", other, id, ent.Row)
		}
		holder[ent.Row] = id
		add(codec.LiveBitmapID(), ent.Row)
		for col, v := range want[id].values {
			c := t.ByPath[col]
			if c == nil {
				return fmt.Errorf("model column %s is not in the schema", col)
			}
			add(codec.ExistsBitmapID(c.ID), ent.Row)
			if fts.Searchable(c.Type) {
				for _, bid := range modelTextBitmaps(c.ID, v) {
					add(bid, ent.Row)
				}
			}
			if !c.Type.Indexed() {
				continue
			}
			for _, val := range modelCodecValues(col, v) {
				pid, err := codec.PostingBitmapID(nil, c.ID, val)
				if err != nil {
					return err
				}
				add(pid, ent.Row)
			}
		}
	}

	stored, err := storedBitmapIDs(db.e.pdb, d.ID, b.Lineage, t.ID)
	if err != nil {
		return err
	}
	vocab, err := storedTerms(db.e.pdb, d.ID, b.Lineage, t.ID)
	if err != nil {
		return err
	}
	var problems []string
	for id := range expected {
		if term, ok := layers.TermOf(id); ok {
			if !vocab[term] {
				problems = append(problems, fmt.Sprintf("%s: word missing from the vocabulary", describeBitmapID(t, []byte(id))))
			}
		}
	}
	all := map[string]bool{string(codec.LiveBitmapID()): true}
	for id := range expected {
		all[id] = true
	}
	for id := range stored {
		all[id] = true
	}
	keys := make([]string, 0, len(all))
	for id := range all {
		keys = append(keys, id)
	}
	sort.Strings(keys)
	for _, id := range keys {
		got, err := layers.ReadBitmap(db.e.pdb, d.ID, b.Lineage, t.ID, []byte(id), nil)
		if err != nil {
			return fmt.Errorf("%s: %v", describeBitmapID(t, []byte(id)), err)
		}
		exp := expected[id]
		if exp == nil {
			exp = roaring.New()
		}
		if !got.Equals(exp) {
			extra := roaring.AndNot(got, exp)
			missing := roaring.AndNot(exp, got)
			problems = append(problems, fmt.Sprintf("%s: extra rows %v, missing rows %v (records %s)",
				describeBitmapID(t, []byte(id)), extra.ToArray(), missing.ToArray(), rowsToIDs(holder, missing)))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("lineage %v:\n\t%s", b.Lineage, strings.Join(problems, "\n\t"))
	}
	return nil
}

func rowsToIDs(holder map[uint32]string, rows *roaring.Bitmap) string {
	var out []string
	it := rows.Iterator()
	for it.HasNext() {
		out = append(out, holder[it.Next()])
	}
	return strings.Join(out, ",")
}
