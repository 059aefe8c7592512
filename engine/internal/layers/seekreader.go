package layers

import (
	"bytes"
	"context"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// SeekReader reads the keys of many lookups, made in increasing key order,
// through one iterator of a reader: a Get seeks forward from where the last
// one left it instead of setting up a lookup of its own in the batch, each
// memtable and each level that may hold the key, which is most of what a
// storage engine's Get of one small key costs. Lookups in another order
// are answered right, only without that saving.
//
// Its Gets see the reader as it was at the first one: writes into an
// indexed batch made after it are not seen, so a writer uses it for a run
// of lookups between its writes. A value Get returns is valid until the
// next Get or Close, not until its closer is closed: GetVersion, and the
// id lookups built on it, read the value before anything else. NewIter
// reads the reader itself. It is not safe for concurrent use.
type SeekReader struct {
	r  pebble.Reader
	it *pebble.Iterator
}

// NewSeekReader returns a SeekReader of r, which must outlive it; its
// iterator is made by the first Get.
func NewSeekReader(r pebble.Reader) *SeekReader { return &SeekReader{r: r} }

// Get returns the value of key, or pebble.ErrNotFound.
func (s *SeekReader) Get(key []byte) ([]byte, io.Closer, error) {
	if s.it == nil {
		it, err := s.r.NewIter(nil)
		if err != nil {
			return nil, nil, err
		}
		s.it = it
	}
	if !s.it.SeekGE(key) || !bytes.Equal(s.it.Key(), key) {
		if err := s.it.Error(); err != nil {
			return nil, nil, err
		}
		return nil, nil, pebble.ErrNotFound
	}
	v, err := s.it.ValueAndErr()
	if err != nil {
		return nil, nil, err
	}
	return v, noCloser{}, nil
}

// NewIter returns an iterator of the underlying reader.
func (s *SeekReader) NewIter(o *pebble.IterOptions) (*pebble.Iterator, error) {
	return s.r.NewIter(o)
}

// NewIterWithContext returns an iterator of the underlying reader.
func (s *SeekReader) NewIterWithContext(ctx context.Context, o *pebble.IterOptions) (*pebble.Iterator, error) {
	return s.r.NewIterWithContext(ctx, o)
}

// Close closes the iterator, not the underlying reader.
func (s *SeekReader) Close() error {
	if s.it == nil {
		return nil
	}
	err := s.it.Close()
	s.it = nil
	return err
}

// noCloser is the closer of a value a SeekReader returns: the iterator
// owns the value.
type noCloser struct{}

func (noCloser) Close() error { return nil }
