package engine

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBranchModel: random writes, forks, branch deletions, flattening
// and reopens run on the engine and on the naive model (model_test.go),
// and every read is compared.

// Flags of the randomized branch tests (this file and indexcheck_test.go).
var (
	modelSeed       = flag.Int64("seed", 0, "seed of the randomized branch tests; 0 picks one from the clock")
	modelOps        = flag.Int("model.ops", 0, "operations of TestBranchModel; 0 means 10,000 with -short and 50,000 without")
	modelIndexEvery = flag.Int("model.indexevery", 0, "check every branch's indexes every N operations of TestBranchModel (0: every 2,500); 1 pins down the operation that breaks an index")
	modelAsync      = flag.Bool("model.async", false, "let background flattening run concurrently with the model's operations (not reproducible)")
)

// modelRun drives the engine and the model with random operations.
type modelRun struct {
	t     testing.TB
	seed  int64
	depth int
	// rowBase is the row counter the tables start from.
	rowBase uint32
	rng     *rand.Rand
	db      *testDB
	live    map[string]modelBranch
	gen     []string // generated record ids, in the order they were made
	step    int
	log     []string // the latest operations, for failure reports
	stats   map[string]int
}

// Pools the random operations draw from. Few explicit ids and few branch
// names, so that ids and names are reused after deletes.
var (
	modelBranchNames = []string{"main", "b1", "b2", "b3", "b4", "b5", "b6", "b7"}
	modelNames       = []string{"ann", "bob", "cy", "dee", "ed", "", "Zoë", "a\x00b"}
	modelTags        = []string{"x", "y", "z", "w", "x y", ""}
	modelMaxBranches = 6
	modelIDPool      = 24
)

// newModelRun opens a database for a randomized run. The seed also picks the
// flatten depth, so that some runs flatten eagerly and some never.
func newModelRun(t testing.TB) *modelRun {
	seed := *modelSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x636f707069636521))
	depth := []int{2, 3, 4, 8}[rng.IntN(4)]
	m := &modelRun{t: t, seed: seed, depth: depth, rng: rng, live: map[string]modelBranch{"main": newModelBranch()}, stats: map[string]int{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with -seed=%d (flatten depth %d)", seed, depth)
		}
	})
	m.db = openTestDB(t, Options{FlattenDepth: depth})
	if rng.IntN(2) == 0 {
		// Start row ids just below 1<<16, so that bitmaps span two
		// chunks and commits log deltas for both.
		m.rowBase = 1<<16 - 100 - uint32(rng.IntN(100))
		m.db.setRowCounters(m.rowBase)
	}
	return m
}

func (m *modelRun) logf(format string, args ...any) {
	const keep = 40
	if len(m.log) == keep {
		copy(m.log, m.log[1:])
		m.log = m.log[:keep-1]
	}
	m.log = append(m.log, fmt.Sprintf("%6d ", m.step)+fmt.Sprintf(format, args...))
}

func (m *modelRun) fatalf(format string, args ...any) {
	m.t.Helper()
	var lins []string
	if m.db.e != nil {
		for _, name := range m.liveNames() {
			if _, b, err := m.db.branchState(name); err == nil {
				lins = append(lins, fmt.Sprintf("%s %v", name, b.Lineage))
			}
		}
	}
	m.t.Fatalf("seed %d (flatten depth %d, rows from %d), step %d: %s\nlineages: %s\nlatest operations:\n%s",
		m.seed, m.depth, m.rowBase, m.step, fmt.Sprintf(format, args...), strings.Join(lins, ", "), strings.Join(m.log, "\n"))
}

func (m *modelRun) liveNames() []string {
	names := make([]string, 0, len(m.live))
	for n := range m.live {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (m *modelRun) pick(s []string) string { return s[m.rng.IntN(len(s))] }

func (m *modelRun) chance(p float64) bool { return m.rng.Float64() < p }

// pickID picks a record id of a table: mostly one that exists in the branch,
// else one of the explicit pool or a generated one.
func (m *modelRun) pickID(br modelBranch, table string) string {
	if ids := br.sortedIDs(table); len(ids) > 0 && m.chance(0.65) {
		return m.pick(ids)
	}
	if len(m.gen) > 0 && m.chance(0.15) {
		return m.pick(m.gen)
	}
	return "r" + strconv.Itoa(m.rng.IntN(modelIDPool))
}

// genValues makes the input values of a write. update makes a sparse change
// that may use numeric operators.
func (m *modelRun) genValues(update bool) map[string]any {
	p := 0.7
	if update {
		p = 0.3
	}
	v := map[string]any{}
	if m.chance(p) {
		if m.chance(0.1) {
			v["name"] = nil
		} else {
			v["name"] = m.pick(modelNames)
		}
	}
	if m.chance(p * 0.6) {
		if m.chance(0.2) {
			v["code"] = nil
		} else {
			v["code"] = "c" + strconv.Itoa(m.rng.IntN(30))
		}
	}
	if m.chance(p) {
		k := m.rng.IntN(11) - 5
		switch {
		case update && m.chance(0.4):
			op := "$increment"
			if m.chance(0.3) {
				op = "$decrement"
			}
			v["n"] = map[string]any{op: json.Number(strconv.Itoa(k))}
		case m.chance(0.1):
			v["n"] = nil
		case m.chance(0.3):
			v["n"] = k
		case m.chance(0.3):
			v["n"] = int64(k) << 40
		default:
			v["n"] = json.Number(strconv.Itoa(k))
		}
	}
	if m.chance(p * 0.7) {
		if m.chance(0.1) {
			v["tags"] = nil
		} else {
			var tags []string
			for range m.rng.IntN(4) {
				tags = append(tags, m.pick(modelTags))
			}
			if m.chance(0.5) {
				l := make([]any, len(tags))
				for i, s := range tags {
					l[i] = s
				}
				v["tags"] = l
			} else {
				v["tags"] = tags
			}
		}
	}
	if m.chance(p * 0.5) {
		switch {
		case update && m.chance(0.2):
			v["score"] = map[string]any{"$increment": 0.5}
		case m.chance(0.15):
			v["score"] = nil
		case m.chance(0.5):
			v["score"] = json.Number([]string{"1.5", "-0.25", "0", "1e300", "3"}[m.rng.IntN(5)])
		default:
			v["score"] = []float64{-1, 0.5, 2.75, 1e-9}[m.rng.IntN(4)]
		}
	}
	if m.chance(p * 0.3) {
		v["note"] = strings.Repeat("note ", m.rng.IntN(4))
	}
	return v
}

// genOp makes one write (or, in a transaction, read) operation on a branch.
func (m *modelRun) genOp(br modelBranch, inTx bool) Op {
	table := testTables[0]
	if m.chance(0.2) {
		table = testTables[1]
	}
	op := Op{Table: table}
	r := m.rng.IntN(100)
	switch {
	case r < 25:
		op.Kind, op.ID, op.Values = OpInsert, m.pickID(br, table), m.genValues(false)
		op.CreateOnly = m.chance(0.15)
		if m.chance(0.03) {
			op.Values["n"] = map[string]any{"$increment": 1} // invalid in an insert
		}
	case r < 33:
		op.Kind, op.Values = OpInsert, m.genValues(false)
		if m.chance(0.3) {
			op.Values["id"] = m.pickID(br, table)
		}
		op.CreateOnly = m.chance(0.5)
	case r < 58:
		op.Kind, op.ID, op.Values = OpUpdate, m.pickID(br, table), m.genValues(true)
	case r < 70:
		op.Kind, op.ID, op.Values, op.Upsert = OpUpdate, m.pickID(br, table), m.genValues(m.chance(0.5)), true
	case r < 95 || !inTx:
		op.Kind, op.ID = OpDelete, m.pickID(br, table)
		op.FailIfMissing = m.chance(0.2)
	default:
		op.Kind, op.ID = OpGet, m.pickID(br, table)
	}
	if op.Kind != OpGet && m.chance(0.08) {
		var v uint64
		if r := br[table][op.ID]; r != nil && m.chance(0.7) {
			v = r.version
		} else {
			v = uint64(m.rng.IntN(3))
		}
		op.IfVersion = &v
	}
	return op
}

func describeOp(op *Op) string {
	kind := map[OpKind]string{OpInsert: "insert", OpUpdate: "update", OpDelete: "delete", OpGet: "get"}[op.Kind]
	s := fmt.Sprintf("%s %s/%s %v", kind, op.Table, op.ID, op.Values)
	if op.CreateOnly {
		s += " createOnly"
	}
	if op.Upsert {
		s += " upsert"
	}
	if op.FailIfMissing {
		s += " failIfMissing"
	}
	if op.IfVersion != nil {
		s += fmt.Sprintf(" ifVersion=%d", *op.IfVersion)
	}
	return s
}

// write applies ops as one transaction (or, single, one WriteOne) on a
// branch of both the engine and the model, and compares the outcomes.
func (m *modelRun) write(branch string, ops []Op, single bool) {
	m.t.Helper()
	now := m.db.clock.tick()
	var desc []string
	for i := range ops {
		desc = append(desc, describeOp(&ops[i]))
	}
	m.logf("write %s single=%v: %s", branch, single, strings.Join(desc, " | "))
	ref := m.db.ref(branch)
	var res []OpResult
	var err error
	if single {
		var r OpResult
		r, err = m.db.e.WriteOne(ref, ops[0])
		res = []OpResult{r}
	} else {
		res, err = m.db.e.Write(context.Background(), ref, ops)
	}
	// got and want list the failed operations as "index:code".
	var got, want []string
	if err != nil {
		var oe *OpErrors
		var ee *Error
		switch {
		case errors.As(err, &oe) && len(oe.Errors) > 0:
			for _, e := range oe.Errors {
				got = append(got, fmt.Sprintf("%d:%d", e.Index, e.Err.Code))
			}
		case single && errors.As(err, &ee):
			got = []string{fmt.Sprintf("0:%d", ee.Code)}
		default:
			m.fatalf("write on %s: unexpected error %v", branch, err)
		}
	}
	// A transaction runs only when all its operations pass the schema;
	// otherwise it reports every one that does not.
	if !single {
		for i := range ops {
			if modelInvalid(&ops[i]) {
				want = append(want, fmt.Sprintf("%d:%d", i, CodeInvalid))
			}
		}
	}
	// Replay on a copy of the model; the copy replaces the branch only if
	// the whole transaction succeeds.
	work := m.live[branch].clone()
	var touched []string // table/id of every operation with a known id
	for i := range ops {
		if want != nil {
			break
		}
		op := ops[i]
		op.MissingNotFound = single
		if op.ID == "" {
			if id, ok := op.Values["id"].(string); ok {
				op.ID = id
			} else if err == nil {
				op.ID = res[i].ID
				m.gen = append(m.gen, op.ID)
			} else {
				op.ID = fmt.Sprintf("generated-%d", i)
			}
		}
		touched = append(touched, op.Table+"/"+op.ID)
		r := modelApply(work, &op, now)
		if r.failed {
			want = []string{fmt.Sprintf("%d:%d", i, r.code)}
			break
		}
		if err == nil && diffRecord(res[i].Record, op.ID, r.rec) != "" || err == nil && (res[i].Rows != r.rows || res[i].Created != r.created || res[i].ID != op.ID) {
			m.fatalf("write on %s, op %d (%s): result id=%s rows=%d created=%v %v, want rows=%d created=%v: %s",
				branch, i, describeOp(&op), res[i].ID, res[i].Rows, res[i].Created, res[i].Record, r.rows, r.created, diffRecord(res[i].Record, op.ID, r.rec))
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		m.fatalf("write on %s: failed ops (index:code) %v (%v), want %v", branch, got, err, want)
	}
	if err != nil {
		m.stats["write failed"]++
	} else {
		m.stats["write ok"]++
		m.live[branch] = work
	}
	// Read back what the operations touched, here and on another branch.
	other := m.pick(m.liveNames())
	for _, tid := range touched {
		table, id, _ := strings.Cut(tid, "/")
		m.checkGet(branch, table, id)
		m.checkGet(other, table, id)
	}
}

// checkGet compares one point read with the model.
func (m *modelRun) checkGet(branch, table, id string) {
	m.t.Helper()
	m.stats["get"]++
	want := m.live[branch][table][id]
	got, err := m.db.e.Get(m.db.ref(branch), table, id)
	if err != nil && CodeOf(err) != CodeNotFound {
		m.fatalf("get %s %s/%s: %v", branch, table, id, err)
	}
	if d := diffRecord(got, id, want); d != "" {
		if *modelAsync {
			// Tell a read that raced background work from a wrong state.
			m.db.e.bg.Wait()
			again, _ := m.db.e.Get(m.db.ref(branch), table, id)
			if diffRecord(again, id, want) == "" {
				d += " (the same read agrees once background flattening has finished: the read raced it)"
			}
		}
		m.fatalf("get %s %s/%s: %s", branch, table, id, d)
	}
}

// checkBranch compares the whole content of a branch with the model: a scan
// through the live bitmap, and point reads of every id ever used.
func (m *modelRun) checkBranch(branch string) {
	m.t.Helper()
	m.db.e.bg.Wait() // full checks compare settled states, also with -model.async
	m.stats["branch check"]++
	br := m.live[branch]
	for _, table := range testTables {
		recs, err := m.db.scanTable(branch, table)
		if err != nil {
			m.fatalf("scan %s %s: %v", branch, table, err)
		}
		ids := br.sortedIDs(table)
		gotIDs := make([]string, len(recs))
		for i, r := range recs {
			gotIDs[i] = r.ID
		}
		if !slices.Equal(gotIDs, ids) {
			m.fatalf("scan %s %s: ids %v, want %v", branch, table, gotIDs, ids)
		}
		for _, r := range recs {
			if d := diffRecord(r, r.ID, br[table][r.ID]); d != "" {
				m.fatalf("scan %s %s: %s", branch, table, d)
			}
		}
		for i := range modelIDPool {
			m.checkGet(branch, table, "r"+strconv.Itoa(i))
		}
		for _, id := range ids {
			m.checkGet(branch, table, id)
		}
		for i := 0; i < 20 && len(m.gen) > 0; i++ {
			m.checkGet(branch, table, m.pick(m.gen))
		}
		m.checkRange(branch, table)
	}
}

// checkRange queries a range of n on a table of a branch, which the
// branch's column store answers (its own, or one borrowed from the branch
// it was forked from), and compares the ids with the model's.
func (m *modelRun) checkRange(branch, table string) {
	m.t.Helper()
	recs := m.live[branch][table]
	if len(recs) == 0 {
		return
	}
	ids := m.live[branch].sortedIDs(table)
	pivot, _ := recs[m.pick(ids)].values["n"].(int64)
	var want []string
	for _, id := range ids {
		if n, ok := recs[id].values["n"].(int64); ok && n >= pivot {
			want = append(want, id)
		}
	}
	size := 1000
	res, err := m.db.e.Query(ctx, m.db.ref(branch), table, QueryRequest{
		Filter: mustFilter(fmt.Sprintf(`{"n": {"$ge": %d}}`, pivot)),
		Page:   PageInput{Size: &size},
	}, QueryOptions{MaxSize: size, NoDepthLimit: true})
	if err != nil {
		m.fatalf("query %s %s: %v", branch, table, err)
	}
	m.stats["range check"]++
	if d, b, t, err := m.db.e.resolveTable(m.db.ref(branch), table); err == nil {
		d.RLockStores()
		if s := d.Store(storeKey{Branch: b.ID, Table: t.ID}); s != nil && s.Owner() != b.ID {
			m.stats["range check, borrowed store"]++
		}
		d.RUnlockStores()
	}
	if got := docIDs(res.Records); len(want) <= size && !slices.Equal(got, want) {
		m.fatalf("query %s %s n ≥ %d: ids %v, want %v", branch, table, pivot, got, want)
	}
}

// checkIndexes checks the bitmaps of every table of a branch.
func (m *modelRun) checkIndexes(branch string) {
	m.t.Helper()
	m.db.e.bg.Wait()
	m.stats["index check"]++
	for _, table := range testTables {
		if err := checkTableIndexes(m.db, branch, table, m.live[branch][table]); err != nil {
			m.fatalf("indexes of %s %s: %v", branch, table, err)
		}
	}
}

// fork creates a branch from a live one in the engine and the model; now
// and then it tries a fork that must fail.
func (m *modelRun) fork() {
	m.t.Helper()
	names := m.liveNames()
	var free []string
	for _, n := range modelBranchNames {
		if m.live[n] == nil {
			free = append(free, n)
		}
	}
	from, to := m.pick(names), ""
	wantCode := Code(-1)
	switch {
	case m.chance(0.05):
		to, wantCode = m.pick(names), CodeAlreadyExists
	case len(free) > 0 && m.chance(0.03):
		from, to, wantCode = m.pick(free), m.pick(free), CodeInvalid
	case len(free) == 0 || len(names) >= modelMaxBranches:
		return
	default:
		to = m.pick(free)
	}
	m.logf("fork %s → %s", from, to)
	m.db.clock.tick()
	err := m.db.e.Branches().Create(m.db.ref(to), CreateBranchRequest{From: from})
	if !*modelAsync {
		m.db.e.bg.Wait()
	}
	if wantCode >= 0 {
		if CodeOf(err) != wantCode || err == nil {
			m.fatalf("fork %s → %s: %v, want code %d", from, to, err, wantCode)
		}
		return
	}
	if err != nil {
		m.fatalf("fork %s → %s: %v", from, to, err)
	}
	m.stats["fork"]++
	m.live[to] = m.live[from].clone()
	m.checkGet(to, m.pick(testTables), m.pickID(m.live[to], testTables[0]))
	if m.chance(0.3) {
		// Queried before either writes, the child borrows the parent's store.
		table := m.pick(testTables)
		m.checkRange(from, table)
		m.checkRange(to, table)
	}
}

// deleteBranch deletes a live branch, or checks that the last one or a
// missing one cannot be deleted.
func (m *modelRun) deleteBranch() {
	m.t.Helper()
	names := m.liveNames()
	name, wantCode := m.pick(names), Code(-1)
	if name == "main" && m.chance(0.8) {
		// Mostly spare main: while the original main lives, its single
		// layer goes through forked and unforked periods.
		name = m.pick(names)
	}
	if len(names) == 1 {
		wantCode = CodeConflict
	} else if m.chance(0.03) {
		name, wantCode = "nope", CodeNotFound
	}
	m.logf("delete branch %s", name)
	err := m.db.e.Branches().Delete(m.db.ref(name))
	if wantCode >= 0 {
		if err == nil || CodeOf(err) != wantCode {
			m.fatalf("delete branch %s: %v, want code %d", name, err, wantCode)
		}
		return
	}
	if err != nil {
		m.fatalf("delete branch %s: %v", name, err)
	}
	m.stats["delete branch"]++
	delete(m.live, name)
	if _, err := m.db.e.Get(m.db.ref(name), testTables[0], "r0"); CodeOf(err) != CodeNotFound {
		m.fatalf("get on deleted branch %s: %v, want not found", name, err)
	}
}

// run performs n random operations with periodic checks and reopens.
func (m *modelRun) run(n int, indexEvery int) {
	m.t.Helper()
	for m.step = 1; m.step <= n; m.step++ {
		if m.step%(n/4+1) == 0 {
			m.logf("reopen")
			m.db.reopen()
			m.stats["reopen"]++
			for _, b := range m.liveNames() {
				m.checkBranch(b)
			}
		}
		names := m.liveNames()
		branch := m.pick(names)
		br := m.live[branch]
		switch r := m.rng.IntN(1000); {
		case r < 30:
			m.fork()
		case r < 45:
			m.deleteBranch()
		case r < 300:
			table := m.pick(testTables)
			m.checkGet(branch, table, m.pickID(br, table))
		case r < 420:
			ops := make([]Op, 2+m.rng.IntN(5))
			for i := range ops {
				ops[i] = m.genOp(br, true)
			}
			m.write(branch, ops, false)
		default:
			m.write(branch, []Op{m.genOp(br, false)}, true)
		}
		if m.step%200 == 0 {
			m.checkBranch(m.pick(m.liveNames()))
		}
		if indexEvery > 0 && m.step%indexEvery == 0 {
			for _, b := range m.liveNames() {
				m.checkBranch(b)
				m.checkIndexes(b)
			}
		}
	}
	m.step = n
	for _, b := range m.liveNames() {
		m.checkBranch(b)
		m.checkIndexes(b)
	}
}

// TestBranchModel runs random writes, transactions, forks (of any live
// branch, forks of forks included), branch deletions, reopens and reads over
// several branches of one database, and checks every read against a naive
// model that keeps a full copy of every branch (DESIGN.md §4). A failure
// prints the seed and the latest operations; rerun it with -seed=N, and
// -model.ops=N to stop early.
func TestBranchModel(t *testing.T) {
	n := *modelOps
	if n == 0 {
		n = 50000
		if testing.Short() {
			n = 10000
		}
	}
	start := time.Now()
	m := newModelRun(t)
	every := *modelIndexEvery
	if every == 0 {
		every = 2500
	}
	m.run(n, every)
	keys := make([]string, 0, len(m.stats))
	for k := range m.stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m.stats[k]))
	}
	t.Logf("seed %d, flatten depth %d, rows from %d: %d operations in %v (%s)", m.seed, m.depth, m.rowBase, n, time.Since(start).Round(time.Millisecond), strings.Join(parts, ", "))
}
