package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/layers"
)

// RangeDigest is the SHA-256 of one key range of a data directory: the
// catalog's, or one database's. The replicas of a cluster that have
// applied the same entries hold byte-identical ranges, so equal digests.
type RangeDigest struct {
	// Workspace and Database name the database; both empty for the
	// catalog.
	Workspace, Database string
	// Keys counts the range's keys.
	Keys int
	// SHA256 is the digest of every key and value in order, each
	// preceded by its length, in hex.
	SHA256 string
}

// DigestDataDir opens the data directory dir read-only, with no server
// holding it, and returns the digest of the catalog, then of each
// database's range by id.
func DigestDataDir(dir string) ([]RangeDigest, error) {
	pdb, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Merger: layers.Merger, Logger: pebbleLogger{&observer{log: slog.New(slog.DiscardHandler)}}})
	if err != nil {
		return nil, fmt.Errorf("engine: open %s: %w", dir, err)
	}
	defer pdb.Close()
	cat, err := catalog.Load(pdb)
	if err != nil {
		return nil, err
	}
	d, err := digestRange(pdb, []byte{codec.NSCatalog})
	if err != nil {
		return nil, err
	}
	out := []RangeDigest{d}
	for _, p := range cat.Placements() {
		d, err := digestRange(pdb, codec.DatabasePrefix(p.ID))
		if err != nil {
			return nil, err
		}
		d.Workspace, d.Database = p.Workspace, p.Name
		out = append(out, d)
	}
	return out, nil
}

// digestRange digests every key under prefix.
func digestRange(r pebble.Reader, prefix []byte) (RangeDigest, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return RangeDigest{}, err
	}
	defer it.Close()
	h := sha256.New()
	var d RangeDigest
	var n [binary.MaxVarintLen64]byte
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return RangeDigest{}, err
		}
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(it.Key())))])
		h.Write(it.Key())
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(v)))])
		h.Write(v)
		d.Keys++
	}
	d.SHA256 = hex.EncodeToString(h.Sum(nil))
	return d, it.Error()
}
