package engine

import (
	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// database is an open database as readers see it: its state and the
// structures derived from it in memory (internal/memstore).
type database = memstore.DB

// storeKey names the structures derived for one table of one branch.
type storeKey = model.TableKey
