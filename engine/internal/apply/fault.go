package apply

import (
	"fmt"
	"log/slog"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// Storage faults. An error or a panic of the storage engine on the write
// path (a full disk, an I/O error) leaves it in a state no later write can
// be trusted to: a batch whose log write failed holds a place in its commit
// pipeline that nothing will fill, and every later commit would wait for
// it. So the first fault puts the applier in a degraded state, for good:
// every command after it fails at once with model.CodeUnavailable, naming
// the cause, without touching the storage engine, and without waiting for
// a lock a stuck command may hold. Reads go on from what is durable and
// visible. Recovery takes a restart, once the cause is fixed.
//
// Whatever a failing commit held is released on the way out: the writer
// lock, the observers' store lock and cache epochs, the catalog's lock.

// Fault returns the error every command now fails with, or nil while the
// storage is healthy.
func (a *Applier) Fault() error {
	if p := a.fault.Load(); p != nil {
		return *p
	}
	return nil
}

// Fail puts the applier in the degraded state for cause, unless it is in
// it already, and returns the error commands fail with. The engine calls
// it for failures of the storage engine's background work (a flush that
// cannot write), which stop writes as surely.
func (a *Applier) Fail(cause error) error {
	err := error(model.Errorf(model.CodeUnavailable, "storage failed, writes are refused until the server restarts: %v", cause))
	if a.fault.CompareAndSwap(nil, &err) {
		a.opts.Logger.Error("storage failed: writes are refused until the server restarts", slog.String("err", cause.Error()))
		return err
	}
	return a.Fault()
}

// storage runs one call of the storage engine's write path; its error or
// panic becomes the applier's fault.
func (a *Applier) storage(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = a.Fail(fmt.Errorf("storage engine panic: %v", p))
		}
	}()
	if err := fn(); err != nil {
		return a.Fail(err)
	}
	return nil
}
