package api

import (
	"bytes"
	"sync"

	"github.com/coppice-db/coppice/engine"
)

// Point reads, and query pages of whole records, answer with records
// encoded by appendView. The engine's RecordCache keeps views, not
// encodings, and hands out the same view for a record until the record is
// written; so the server keeps the encoding of each cached view it
// encoded, keyed by the view itself, and a read whose view it knows
// encodes nothing. An entry holds its view, so a key is never
// reused by another view; entries of views the engine has replaced are
// never asked for again and leave as the budget evicts them.

// viewEncodings maps views to their encodings, up to a memory budget. It
// is safe for concurrent use.
type viewEncodings struct {
	limit  int // bytes per shard
	shards [viewEncodingShards]viewEncodingShard
}

// viewEncodingShards spreads the cache's lock over this many maps.
const viewEncodingShards = 16

// viewEncodingShard is one lock's share of the encodings.
type viewEncodingShard struct {
	mu    sync.RWMutex
	m     map[*engine.RecordView][]byte
	bytes int
}

// newViewEncodings returns a cache of about maxBytes of encodings (their
// views are the engine cache's, counted there).
func newViewEncodings(maxBytes int) *viewEncodings {
	c := &viewEncodings{limit: max(maxBytes/viewEncodingShards, 1)}
	for i := range c.shards {
		c.shards[i].m = map[*engine.RecordView][]byte{}
	}
	return c
}

// shard picks a view's shard from its id and version, which stay with
// the view.
func (c *viewEncodings) shard(v *engine.RecordView) *viewEncodingShard {
	h := uint32(v.Version)
	for i := 0; i < len(v.ID); i++ {
		h = h*31 + uint32(v.ID[i])
	}
	return &c.shards[h%viewEncodingShards]
}

// encodingSize estimates the memory an entry holds beyond its view.
func encodingSize(b []byte) int { return 64 + cap(b) }

// appendEncoding appends the encoding of v to dst, made with enc the first
// time: enc appends to dst, and the cache keeps a copy of exactly what it
// appended, so a record is encoded once into the response and copied once.
func (c *viewEncodings) appendEncoding(dst []byte, v *engine.RecordView, enc func(dst []byte, v *engine.RecordView) []byte) []byte {
	s := c.shard(v)
	s.mu.RLock()
	b, ok := s.m[v]
	s.mu.RUnlock()
	if ok {
		return append(dst, b...)
	}
	start := len(dst)
	dst = enc(dst, v)
	b = bytes.Clone(dst[start:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[v]; ok {
		return dst // another request encoded it meanwhile, to the same bytes
	}
	s.m[v] = b
	s.bytes += encodingSize(b)
	// Drop other entries, in the map's random order, while over budget.
	for victim, old := range s.m {
		if s.bytes <= c.limit {
			break
		}
		if victim != v {
			delete(s.m, victim)
			s.bytes -= encodingSize(old)
		}
	}
	return dst
}
