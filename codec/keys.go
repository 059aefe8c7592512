package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Namespace bytes: the first byte of every key. See KEYS.md for the layouts.
const (
	// NSCatalog holds the global catalog: users, API keys, workspaces,
	// members, invites and database placement.
	NSCatalog byte = 0x01
	// NSData holds everything of one database in one contiguous range:
	// NSData | db u32 | layer u32 | kind | ...
	NSData byte = 0x02
)

// Global catalog kinds: NSCatalog | kind | ...
const (
	CatUser        byte = 0x10 // | userID → user JSON
	CatUserEmail   byte = 0x11 // | lower(email) → userID
	CatKey         byte = 0x12 // | sha256(secret) → API key JSON
	CatUserKey     byte = 0x13 // | userID 0x00 | key name → sha256(secret)
	CatWorkspace   byte = 0x14 // | core(6) → workspace JSON
	CatMember      byte = 0x15 // | core(6) | userID → member JSON
	CatInvite      byte = 0x16 // | core(6) | inviteID → invite JSON
	CatDatabase    byte = 0x17 // | db u32 → database JSON (workspace, name, region, ...)
	CatCounter     byte = 0x1F // | name → u64 big-endian
	CatInviteKey   byte = 0x18 // | sha256(invite key) → core(6) 0x00 inviteID
	CatServerState byte = 0x19 // | name → server-wide settings (cursor secret, ...)
	CatNode        byte = 0x1A // | node u64 → node JSON (a cluster's nodes)
	CatRequest     byte = 0x1B // | request id → applied index u64 · result (a replicated catalog's recent requests)
	CatRequestAt   byte = 0x1C // | applied index u64 · request id → empty (the same, by index)
)

// Layer 0 of every database holds its metadata: NSData | db | 0 | kind | ...
const (
	MetaCounter   byte = 0x01 // | name → u64 big-endian
	MetaBranch    byte = 0x02 // | branch id u32 → branch JSON (name, lineage, schema, ...)
	MetaMigration byte = 0x03 // | branch id u32 | seq u64 → migration JSON
	MetaGitBranch byte = 0x04 // | git branch name → service branch name
	MetaRequest   byte = 0x05 // | request id → applied index u64 · result (a replicated database's recent requests)
	MetaRequestAt byte = 0x06 // | applied index u64 · request id → empty (the same, by index)
)

// Data kinds inside a layer (layer ≥ 1): NSData | db | layer | kind | table u32 | ...
const (
	KindRecordCur  byte = 0x10 // | row u32 → record (current version in this layer)
	KindRecordHist byte = 0x11 // | row u32 | ^seq u64 → older record version kept for forks
	KindIDMapCur   byte = 0x12 // | record id 0x00 → row u32 | seq u64 | deleted byte
	KindIDMapHist  byte = 0x13 // | record id 0x00 | ^seq u64 → same value as KindIDMapCur
	KindBitmapCur  byte = 0x20 // | bitmap id | chunk u16 → delta (merged)
	KindBitmapHist byte = 0x21 // | bitmap id | chunk u16 | seq u64 → exact delta of that commit
	KindTerm       byte = 0x30 // | term → empty: a word some text column of the table held in this layer
	KindFileChunk  byte = 0x40 // | col u32 | file id 0x00 | seq u64 | chunk u16 → bytes of a file's content
)

// Bitmap ids name one bitmap of a table: BitmapLive, BitmapMask, BitmapExists |
// col u32, or BitmapPosting | col u32 | ordered value.
const (
	BitmapLive    byte = 0x01 // rows alive in this layer
	BitmapMask    byte = 0x02 // rows this layer has an entry for (hides lower layers)
	BitmapExists  byte = 0x03 // | col u32: rows whose column is not null
	BitmapPosting byte = 0x04 // | col u32 | ordered value: rows holding the value
	BitmapTerm    byte = 0x05 // | col u32 | ordered term [| level u8]: rows whose text holds the word [at least TFLevels[level] times]
	BitmapLength  byte = 0x07 // | col u32 | bucket u8: rows whose text has that many words (LengthBucket)
)

// MetaLayer is the layer id of a database's metadata.
const MetaLayer uint32 = 0

// ErrBadKey reports a key that does not parse as the family it was given to.
var ErrBadKey = errors.New("codec: malformed key")

// AppendU32 appends v big-endian.
func AppendU32(dst []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(dst, v) }

// AppendU64 appends v big-endian.
func AppendU64(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }

// CatalogKey returns NSCatalog | kind | parts....
func CatalogKey(kind byte, parts ...[]byte) []byte {
	n := 2
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 0, n)
	k = append(k, NSCatalog, kind)
	for _, p := range parts {
		k = append(k, p...)
	}
	return k
}

// DatabasePrefix returns NSData | db: the prefix of every key of the database.
func DatabasePrefix(db uint32) []byte {
	return AppendU32([]byte{NSData}, db)
}

// LayerPrefix returns NSData | db | layer: the prefix of every key of a layer.
func LayerPrefix(db, layer uint32) []byte {
	k := make([]byte, 0, 9)
	k = append(k, NSData)
	k = AppendU32(k, db)
	return AppendU32(k, layer)
}

// TablePrefix returns NSData | db | layer | kind | table.
func TablePrefix(dst []byte, db, layer uint32, kind byte, table uint32) []byte {
	dst = append(dst, NSData)
	dst = AppendU32(dst, db)
	dst = AppendU32(dst, layer)
	dst = append(dst, kind)
	return AppendU32(dst, table)
}

// MetaKey returns NSData | db | MetaLayer | kind | suffix.
func MetaKey(db uint32, kind byte, suffix []byte) []byte {
	k := LayerPrefix(db, MetaLayer)
	k = append(k, kind)
	return append(k, suffix...)
}

// RecordKey returns the current-version key of a row.
func RecordKey(dst []byte, db, layer, table, row uint32) []byte {
	dst = TablePrefix(dst, db, layer, KindRecordCur, table)
	return AppendU32(dst, row)
}

// RecordHistKey returns the key of the version of a row written at seq. Seq is
// stored inverted so that a forward seek to ^s finds the newest version ≤ s.
func RecordHistKey(dst []byte, db, layer, table, row uint32, seq uint64) []byte {
	dst = TablePrefix(dst, db, layer, KindRecordHist, table)
	dst = AppendU32(dst, row)
	return AppendU64(dst, ^seq)
}

// IDMapKey returns the current id-map key of a public record id. Record ids
// never contain 0x00, which terminates them.
func IDMapKey(dst []byte, db, layer, table uint32, id string) []byte {
	dst = TablePrefix(dst, db, layer, KindIDMapCur, table)
	dst = append(dst, id...)
	return append(dst, 0)
}

// IDMapHistKey returns the id-map history key of a record id at seq (inverted).
func IDMapHistKey(dst []byte, db, layer, table uint32, id string, seq uint64) []byte {
	dst = TablePrefix(dst, db, layer, KindIDMapHist, table)
	dst = append(dst, id...)
	dst = append(dst, 0)
	return AppendU64(dst, ^seq)
}

// BitmapKey returns the current key of one chunk of a bitmap.
func BitmapKey(dst []byte, db, layer, table uint32, bitmapID []byte, chunk uint16) []byte {
	dst = TablePrefix(dst, db, layer, KindBitmapCur, table)
	dst = append(dst, bitmapID...)
	return binary.BigEndian.AppendUint16(dst, chunk)
}

// BitmapHistKey returns the key of the exact delta that commit seq applied to
// one chunk of a bitmap.
func BitmapHistKey(dst []byte, db, layer, table uint32, bitmapID []byte, chunk uint16, seq uint64) []byte {
	dst = TablePrefix(dst, db, layer, KindBitmapHist, table)
	dst = append(dst, bitmapID...)
	dst = binary.BigEndian.AppendUint16(dst, chunk)
	return AppendU64(dst, seq)
}

// BitmapPrefix returns the prefix of every chunk key of one bitmap of a kind
// (KindBitmapCur or KindBitmapHist).
func BitmapPrefix(dst []byte, db, layer uint32, kind byte, table uint32, bitmapID []byte) []byte {
	dst = TablePrefix(dst, db, layer, kind, table)
	return append(dst, bitmapID...)
}

// LiveBitmapID names the live-row bitmap of a table.
func LiveBitmapID() []byte { return []byte{BitmapLive} }

// MaskBitmapID names the mask bitmap of a table.
func MaskBitmapID() []byte { return []byte{BitmapMask} }

// ExistsBitmapID names the not-null bitmap of a column.
func ExistsBitmapID(col uint32) []byte { return AppendU32([]byte{BitmapExists}, col) }

// PostingBitmapID names the posting of one value of a column. The value must
// be a scalar (AppendOrdered).
func PostingBitmapID(dst []byte, col uint32, v Value) ([]byte, error) {
	dst = append(dst, BitmapPosting)
	dst = AppendU32(dst, col)
	return AppendOrdered(dst, v)
}

// TermBitmapID names the rows whose text column col holds the word term.
func TermBitmapID(dst []byte, col uint32, term string) []byte {
	dst = append(dst, BitmapTerm)
	dst = AppendU32(dst, col)
	return append(OrderedStringPrefix(dst, term), ordEscape, ordTerminator)
}

// TermTFBitmapID names the rows whose text column col holds term at least
// fts.TFLevels[level] times: the term's bitmap id and the level, so that
// one scan of a term's prefix reads its rows and its frequencies.
func TermTFBitmapID(dst []byte, col uint32, level uint8, term string) []byte {
	return append(TermBitmapID(dst, col, term), level)
}

// LengthBitmapID names the rows whose text column col counts a number of
// words in the given LengthBucket.
func LengthBitmapID(dst []byte, col uint32, bucket uint8) []byte {
	dst = append(dst, BitmapLength)
	dst = AppendU32(dst, col)
	return append(dst, bucket)
}

// TermKey returns the key recording that a table's text held term in a
// layer.
func TermKey(dst []byte, db, layer, table uint32, term string) []byte {
	dst = TablePrefix(dst, db, layer, KindTerm, table)
	return append(dst, term...)
}

// FileChunkKey returns the key of one chunk of the content a commit seq
// wrote for a file of a file or file[] column. File ids never contain 0x00,
// which terminates them; seq is the database-wide commit number, so the
// contents two branches write for one file never share a key.
func FileChunkKey(dst []byte, db, layer, table, col uint32, fileID string, seq uint64, chunk uint16) []byte {
	dst = FileContentPrefix(dst, db, layer, table, col, fileID, seq)
	return binary.BigEndian.AppendUint16(dst, chunk)
}

// FileContentPrefix returns the prefix of every chunk key of one content of
// a file.
func FileContentPrefix(dst []byte, db, layer, table, col uint32, fileID string, seq uint64) []byte {
	dst = TablePrefix(dst, db, layer, KindFileChunk, table)
	dst = AppendU32(dst, col)
	dst = append(dst, fileID...)
	dst = append(dst, 0)
	return AppendU64(dst, seq)
}

// PostingColumnPrefix returns the bitmap-id prefix shared by every posting of a
// column: range and prefix scans start from it.
func PostingColumnPrefix(dst []byte, col uint32) []byte {
	dst = append(dst, BitmapPosting)
	return AppendU32(dst, col)
}

// ParseHistSeq returns the seq of a BitmapHistKey (its last eight bytes) and
// the chunk before it.
func ParseHistSeq(key []byte) (chunk uint16, seq uint64, err error) {
	if len(key) < 10 {
		return 0, 0, ErrBadKey
	}
	n := len(key)
	return binary.BigEndian.Uint16(key[n-10 : n-8]), binary.BigEndian.Uint64(key[n-8:]), nil
}

// DataKey is a parsed data-plane key.
type DataKey struct {
	DB, Layer uint32
	Kind      byte
	Table     uint32
	Rest      []byte // the family-specific suffix, aliasing the input
}

// ParseDataKey parses NSData | db | layer | kind | table | rest for the data
// kinds of a layer ≥ 1 (not metadata).
func ParseDataKey(key []byte) (DataKey, error) {
	if len(key) < 14 || key[0] != NSData {
		return DataKey{}, ErrBadKey
	}
	k := DataKey{
		DB:    binary.BigEndian.Uint32(key[1:5]),
		Layer: binary.BigEndian.Uint32(key[5:9]),
		Kind:  key[9],
		Table: binary.BigEndian.Uint32(key[10:14]),
		Rest:  key[14:],
	}
	if k.Layer == MetaLayer {
		return DataKey{}, fmt.Errorf("%w: metadata layer", ErrBadKey)
	}
	switch k.Kind {
	case KindRecordCur:
		if len(k.Rest) != 4 {
			return DataKey{}, ErrBadKey
		}
	case KindRecordHist:
		if len(k.Rest) != 12 {
			return DataKey{}, ErrBadKey
		}
	case KindIDMapCur:
		if len(k.Rest) < 2 || k.Rest[len(k.Rest)-1] != 0 || indexZero(k.Rest) != len(k.Rest)-1 {
			return DataKey{}, ErrBadKey
		}
	case KindIDMapHist:
		if len(k.Rest) < 10 || k.Rest[len(k.Rest)-9] != 0 || indexZero(k.Rest) != len(k.Rest)-9 {
			return DataKey{}, ErrBadKey
		}
	case KindBitmapCur:
		if len(k.Rest) < 3 {
			return DataKey{}, ErrBadKey
		}
	case KindBitmapHist:
		if len(k.Rest) < 11 {
			return DataKey{}, ErrBadKey
		}
	case KindTerm:
		if len(k.Rest) == 0 {
			return DataKey{}, ErrBadKey
		}
	case KindFileChunk:
		// col u32 | file id (≥ 1 byte) 0x00 | seq u64 | chunk u16
		if n := len(k.Rest); n < 16 || k.Rest[n-11] != 0 || indexZero(k.Rest[4:]) != n-15 {
			return DataKey{}, ErrBadKey
		}
	default:
		return DataKey{}, fmt.Errorf("%w: unknown kind %#x", ErrBadKey, k.Kind)
	}
	return k, nil
}

func indexZero(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// PrefixEnd returns the smallest key greater than every key with prefix p, or
// nil when there is none (p is all 0xFF).
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
