package layers

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// A backup is one database's key range at one snapshot: every branch, layer,
// record, index and counter, since all of them live in the range. Keys are
// written without the database's id prefix, so a backup restores under any
// id. Format:
//
//	"coppice-backup-1\n"
//	n × { uvarint len(key) · key · uvarint len(value) · value }   (len(key) > 0)
//	0x00 · crc32c (4 bytes, big-endian) of everything before it
const backupMagic = "coppice-backup-1\n"

// crcTable is the checksum of a range copy: CRC-32C.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// WriteRange writes the key range of database db, as r holds it, to w in
// the format above. r should be a snapshot: the copy is then consistent.
func WriteRange(r pebble.Reader, db uint32, w io.Writer) error {
	return WritePrefixed(r, codec.DatabasePrefix(db), backupMagic, w)
}

// WritePrefixed writes every key under prefix, without the prefix, in the
// format of a backup opened by magic instead: other ranges (a replicated
// catalog) are copied the same way.
func WritePrefixed(r pebble.Reader, prefix []byte, magic string, w io.Writer) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	h := crc32.New(crcTable)
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	if _, err := bw.WriteString(magic); err != nil {
		return err
	}
	var lb [binary.MaxVarintLen64]byte
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		k := it.Key()[len(prefix):]
		bw.Write(lb[:binary.PutUvarint(lb[:], uint64(len(k)))])
		bw.Write(k)
		bw.Write(lb[:binary.PutUvarint(lb[:], uint64(len(v)))])
		if _, err := bw.Write(v); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if err := bw.WriteByte(0); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err = w.Write(binary.BigEndian.AppendUint32(nil, h.Sum32()))
	return err
}

// ReadRange checks a backup's magic and checksum and calls fn for every
// key and value. The checksum is only known at the end, so fn's effects
// must be discardable (a batch that is dropped on error).
func ReadRange(r io.Reader, fn func(k, v []byte) error) error {
	return ReadPrefixed(r, backupMagic, fn)
}

// ReadPrefixed is ReadRange of what WritePrefixed wrote with magic.
func ReadPrefixed(r io.Reader, want string, fn func(k, v []byte) error) error {
	h := crc32.New(crcTable)
	br := bufio.NewReader(r)
	magic := make([]byte, len(want))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != want {
		return model.Invalidf("not a Coppice backup")
	}
	h.Write(magic)
	var lb [binary.MaxVarintLen64]byte
	readBytes := func() ([]byte, error) {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, err
		}
		h.Write(lb[:binary.PutUvarint(lb[:], n)])
		if n > 1<<30 {
			return nil, errors.New("entry too large")
		}
		b := make([]byte, n)
		if _, err = io.ReadFull(br, b); err != nil {
			return nil, err
		}
		h.Write(b)
		return b, nil
	}
	for {
		k, err := readBytes()
		if err != nil {
			return model.Invalidf("backup is truncated or malformed: %v", err)
		}
		if len(k) == 0 {
			break
		}
		v, err := readBytes()
		if err != nil {
			return model.Invalidf("backup is truncated or malformed: %v", err)
		}
		if err := fn(k, v); err != nil {
			return err
		}
	}
	var sum [4]byte
	if _, err := io.ReadFull(br, sum[:]); err != nil {
		return model.Invalidf("backup has no checksum")
	}
	if binary.BigEndian.Uint32(sum[:]) != h.Sum32() {
		return model.Invalidf("backup checksum mismatch")
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return model.Invalidf("backup has bytes after its checksum")
	}
	return nil
}
