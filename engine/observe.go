package engine

// The write path tells the structures derived from a database's keys
// about every command that changes them, without knowing what they are:
// each registers a writeObserver, and Engine.apply calls them all around
// the moment the command's batch becomes visible. The column, search and
// vector stores, the bitmap caches and the record cache (store.go,
// bitmapcache.go) are kept current this way.

// writeObserver is told of the commands applied to a database.
type writeObserver interface {
	// prepare is called under the database's writer lock, after the
	// command is staged and before its batch becomes visible. tx holds
	// what the command changed: the rows it wrote (tx.changes), the words
	// new to a table (tx.terms), and the branches it added, changed or
	// removed (tx.state(), set when tx.branches is). The returned func,
	// when not nil, is called once, still under the writer lock: with true
	// after the batch is visible and the database's state published, or
	// with false when it failed.
	prepare(d *database, tx *dbTx) (done func(applied bool))
}

// notify prepares every observer for the command tx and returns what
// tells them, once, how it ended.
func (e *Engine) notify(tx *dbTx) func(applied bool) {
	if len(e.observers) == 1 {
		// The usual case, without a list to allocate.
		if done := e.observers[0].prepare(tx.d, tx); done != nil {
			return done
		}
		return func(bool) {}
	}
	var dones []func(bool)
	for _, o := range e.observers {
		if f := o.prepare(tx.d, tx); f != nil {
			dones = append(dones, f)
		}
	}
	return func(applied bool) {
		for _, f := range dones {
			f(applied)
		}
	}
}

// memObserver keeps a database's in-memory structures current: column,
// search and vector stores, bitmap caches and the write marks that decide
// which branches may share a store.
type memObserver struct{}

func (memObserver) prepare(d *database, tx *dbTx) func(bool) {
	lock := d.hasStores.Load() && (len(tx.changes) > 0 || tx.branches != nil)
	if lock {
		d.storeMu.Lock()
	}
	endWrite := d.startWrite(tx) // cache epochs odd: a write is in flight
	return func(applied bool) {
		if applied {
			if tx.branches != nil {
				d.forgetWrites()
			}
			if lock {
				d.updateStores(tx)
			}
		}
		endWrite() // even again: the write is visible, or failed
		if lock {
			d.storeMu.Unlock()
		}
	}
}

// forgetWrites drops the write marks of branches that no longer exist: a
// deleted branch writes no more. The caller holds d.mu.
func (d *database) forgetWrites() {
	st := d.state.Load()
	for k := range d.written {
		if st.byID[k.branch] == nil {
			delete(d.written, k)
		}
	}
}
