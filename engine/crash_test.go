package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// The crash test runs a writer in a child process (this test binary, started
// again with crashChildEnv set), kills it with SIGKILL mid-load and checks, in
// the parent, that every write the child saw acknowledged is there after
// reopening (DESIGN.md §9). The rounds share one directory, so each round
// also recovers from the crash before it.
//
// The child speaks a line protocol on stdout; every line ends in " $" so a
// line cut short by the kill is recognisably incomplete:
//
//	ready WS                 setup done; WS is the workspace core id
//	bulk ID...               a bulk insert of these ids is about to be sent
//	ack ID...                the insert (single or bulk) of these ids returned
//	upd ID K                 the update setting counter ID to K returned
const (
	crashChildEnv = "COPPICE_CRASH_CHILD" // data directory; set only in the child
	crashRoundEnv = "COPPICE_CRASH_ROUND"
	crashWSEnv    = "COPPICE_CRASH_WS" // workspace core id after the first round
	crashDB       = "crash"
	crashTable    = "items"
	crashWorkers  = 4
)

// crashEpoch is the base of the datetime values the child writes.
var crashEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// crashColumns is the table the child writes.
var crashColumns = []engine.ColumnDef{
	{Name: "name", Type: engine.TypeString},
	{Name: "n", Type: engine.TypeInt},
	{Name: "score", Type: engine.TypeFloat},
	{Name: "tags", Type: engine.TypeMultiple},
	{Name: "at", Type: engine.TypeDatetime},
	{Name: "ok", Type: engine.TypeBool},
}

// crashValues derives a record's values from its id alone, so the parent
// can check a record without being told what was written.
func crashValues(id string) map[string]any {
	h := fnv.New64a()
	h.Write([]byte(id))
	r := rand.New(rand.NewPCG(h.Sum64(), 1))
	var tags []string
	for _, i := range r.Perm(50)[:1+r.IntN(3)] {
		tags = append(tags, "t"+strconv.Itoa(i))
	}
	return map[string]any{
		"name":  "rec " + id,
		"n":     r.Int64N(1 << 40),
		"score": float64(r.IntN(1_000_000)) / 1000,
		"tags":  tags,
		"at":    crashEpoch.Add(time.Duration(r.Int64N(int64(1000 * 24 * time.Hour)))).Truncate(time.Microsecond),
		"ok":    r.IntN(2) == 1,
	}
}

// crashCounterID names the record a worker of a round updates repeatedly.
func crashCounterID(round, worker int) string {
	return fmt.Sprintf("ctr-r%d-w%d", round, worker)
}

func TestCrashDurability(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	switch runtime.GOOS {
	case "js", "wasip1", "ios", "android":
		t.Skipf("cannot start a child process on %s", runtime.GOOS)
	}
	// Vary how long the child writes before it dies: from right after its
	// first acknowledgements to, in the long mode, runs long enough for
	// memtable flushes and compactions to be under way at the kill.
	rounds, maxRun, maxAcks := 12, 3000, 50_000
	if testing.Short() {
		rounds, maxRun, maxAcks = 3, 450, 2000
	}
	dir := t.TempDir()
	st := &crashState{inserted: map[string]bool{}, counters: map[string]int{}}
	for round := range rounds {
		r := rand.New(rand.NewPCG(uint64(round), 7))
		after := time.Duration(50+r.IntN(maxRun-50)) * time.Millisecond
		runCrashChild(t, dir, round, after, maxAcks, st)
		verifyCrash(t, dir, round, st)
		if t.Failed() {
			return
		}
	}
}

// crashState is what the parent learned from the children: acknowledged
// inserts, the highest acknowledged value of every counter, and the bulk
// inserts that were started (each must be all there or not at all).
type crashState struct {
	ws       string
	inserted map[string]bool
	counters map[string]int
	bulks    [][]string
}

// runCrashChild starts a child writing into dir, kills it once it has
// acknowledged writes for the given time (or maxAcks acknowledgements), and
// records every acknowledgement it printed.
func runCrashChild(t *testing.T, dir string, round int, after time.Duration, maxAcks int, st *crashState) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashDurability$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		crashChildEnv+"="+dir,
		crashRoundEnv+"="+strconv.Itoa(round),
		crashWSEnv+"="+st.ws,
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()

	acks := 0
	killed := false
	var killAt <-chan time.Time
	safety := time.After(60 * time.Second)
	kill := func() {
		if !killed {
			killed = true
			if err := cmd.Process.Kill(); err != nil {
				t.Errorf("kill: %v", err)
			}
		}
	}
	handle := func(line string) {
		f, ok := strings.CutSuffix(line, " $")
		if !ok {
			return // cut short by the kill, or not ours
		}
		fields := strings.Fields(f)
		if len(fields) < 2 {
			return
		}
		switch fields[0] {
		case "ready":
			if st.ws != "" && st.ws != fields[1] {
				t.Errorf("child reports workspace %s, want %s", fields[1], st.ws)
			}
			st.ws = fields[1]
			killAt = time.After(after)
		case "bulk":
			st.bulks = append(st.bulks, slices.Clone(fields[1:]))
		case "ack":
			for _, id := range fields[1:] {
				st.inserted[id] = true
			}
			acks++
		case "upd":
			k, err := strconv.Atoi(fields[2])
			if err != nil || len(fields) != 3 {
				t.Errorf("bad line %q", line)
				return
			}
			st.counters[fields[1]] = max(st.counters[fields[1]], k)
			acks++
		}
	}
loop:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break loop
			}
			handle(line)
			if acks >= maxAcks {
				kill()
			}
		case <-killAt:
			kill()
		case <-safety:
			kill()
			t.Errorf("round %d: child did not get going within a minute", round)
		}
	}
	// Lines still in the pipe after the kill were acknowledged before it;
	// the loop above read them all (the pipe closes when the child dies).
	err = cmd.Wait()
	if !killed {
		t.Fatalf("round %d: child exited on its own (%v):\n%s", round, err, stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("round %d: wait: %v", round, err)
	}
	if t.Failed() {
		t.Fatalf("round %d: child stderr:\n%s", round, stderr.String())
	}
	t.Logf("round %d: killed after %v with %d acknowledgements", round, after, acks)
}

// verifyCrash reopens dir and checks every acknowledged write of every round
// so far.
func verifyCrash(t *testing.T, dir string, round int, st *crashState) {
	t.Helper()
	e, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatalf("round %d: reopen: %v", round, err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	ref := engine.Ref{Workspace: st.ws, Database: crashDB, Branch: "main"}
	lost := 0
	for _, id := range slices.Sorted(maps.Keys(st.inserted)) {
		rec, err := e.Get(ref, crashTable, id)
		if err != nil {
			if lost++; lost <= 10 {
				t.Errorf("round %d: acknowledged record %s: %v", round, id, err)
			}
			continue
		}
		if diff := crashDiff(rec.Values, crashValues(id)); diff != "" {
			t.Errorf("round %d: record %s: %s", round, id, diff)
		}
	}
	if lost > 0 {
		t.Errorf("round %d: %d of %d acknowledged inserts lost", round, lost, len(st.inserted))
	}
	for _, id := range slices.Sorted(maps.Keys(st.counters)) {
		k := st.counters[id]
		rec, err := e.Get(ref, crashTable, id)
		if err != nil {
			t.Errorf("round %d: counter %s (acknowledged at %d): %v", round, id, k, err)
			continue
		}
		// A worker sends update k+1 only after k is acknowledged, so the
		// stored value is the last acknowledged one or the one after it.
		if n, _ := rec.Values["n"].(int64); n != int64(k) && n != int64(k+1) {
			t.Errorf("round %d: counter %s = %v, acknowledged %d", round, id, rec.Values["n"], k)
		}
	}
	for _, ids := range st.bulks {
		found := 0
		for _, id := range ids {
			if _, err := e.Get(ref, crashTable, id); err == nil {
				found++
			} else if engine.CodeOf(err) != engine.CodeNotFound {
				t.Errorf("round %d: get %s: %v", round, id, err)
			}
		}
		if found != 0 && found != len(ids) {
			t.Errorf("round %d: bulk insert %v is torn: %d of %d records there", round, ids, found, len(ids))
		}
	}
}

// crashDiff describes how got differs from the values crashValues wrote.
func crashDiff(got, want map[string]any) string {
	var diffs []string
	for k, w := range want {
		g := got[k]
		same := false
		switch w := w.(type) {
		case time.Time:
			gt, ok := g.(time.Time)
			same = ok && gt.Equal(w)
		case []string:
			gs, ok := g.([]string)
			same = ok && slices.Equal(gs, w)
		default:
			same = g == w
		}
		if !same {
			diffs = append(diffs, fmt.Sprintf("%s = %#v, want %#v", k, g, w))
		}
	}
	if len(got) != len(want) {
		diffs = append(diffs, fmt.Sprintf("%d columns, want %d", len(got), len(want)))
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

// crashChild is the child's side: open dir, set up the table on the first
// round, then write from several goroutines until killed.
func crashChild(dir string) {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
		os.Exit(2)
	}
	round, err := strconv.Atoi(os.Getenv(crashRoundEnv))
	if err != nil {
		fail("bad %s: %v", crashRoundEnv, err)
	}
	e, err := engine.Open(dir, engine.Options{})
	if err != nil {
		fail("open: %v", err)
	}
	ws := os.Getenv(crashWSEnv)
	if ws == "" {
		ws, err = crashSetup(e)
		if err != nil {
			fail("setup: %v", err)
		}
	}
	ref := engine.Ref{Workspace: ws, Database: crashDB, Branch: "main"}

	var outMu sync.Mutex
	say := func(words ...string) {
		line := strings.Join(words, " ") + " $\n"
		outMu.Lock()
		defer outMu.Unlock()
		// os.Stdout is unbuffered: the line is in the pipe when this returns.
		if _, err := io.WriteString(os.Stdout, line); err != nil {
			os.Exit(3) // the parent is gone
		}
	}
	say("ready", ws)

	for w := range crashWorkers {
		go func() {
			r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
			ctr := crashCounterID(round, w)
			v := crashValues(ctr)
			v["n"] = int64(0)
			if _, err := e.WriteOne(ref, engine.Op{Kind: engine.OpInsert, Table: crashTable, ID: ctr, Values: v}); err != nil {
				fail("insert %s: %v", ctr, err)
			}
			say("upd", ctr, "0")
			k := 0
			for seq := 0; ; seq++ {
				id := fmt.Sprintf("r%d-w%d-%d", round, w, seq)
				switch p := r.IntN(4); {
				case p < 2:
					if _, err := e.WriteOne(ref, engine.Op{Kind: engine.OpInsert, Table: crashTable, ID: id, Values: crashValues(id), CreateOnly: true}); err != nil {
						fail("insert %s: %v", id, err)
					}
					say("ack", id)
				case p == 2:
					ids := make([]string, 2+r.IntN(19))
					recs := make([]map[string]any, len(ids))
					for i := range ids {
						ids[i] = fmt.Sprintf("%s-%d", id, i)
						recs[i] = crashValues(ids[i])
						recs[i]["id"] = ids[i]
					}
					say(append([]string{"bulk"}, ids...)...)
					if _, err := e.BulkInsert(context.Background(), ref, crashTable, recs); err != nil {
						fail("bulk insert %s: %v", id, err)
					}
					say(append([]string{"ack"}, ids...)...)
				default:
					k++
					if _, err := e.WriteOne(ref, engine.Op{Kind: engine.OpUpdate, Table: crashTable, ID: ctr, Values: map[string]any{"n": int64(k)}}); err != nil {
						fail("update %s: %v", ctr, err)
					}
					say("upd", ctr, strconv.Itoa(k))
				}
			}
		}()
	}
	// The parent kills this process; exit on our own only if it never does.
	time.Sleep(2 * time.Minute)
	fail("not killed within two minutes")
}

// crashSetup creates the user, workspace, database and table the child
// writes into and returns the workspace core id.
func crashSetup(e *engine.Engine) (string, error) {
	u, err := e.Accounts().CreateUser(engine.NewUser{Email: "crash@example.com"})
	if err != nil {
		return "", err
	}
	ws, err := e.Accounts().CreateWorkspace(u.ID, "crash", "")
	if err != nil {
		return "", err
	}
	if _, err := e.CreateDatabase(engine.CreateDatabaseRequest{Workspace: ws.Core, Name: crashDB, Region: "local"}); err != nil {
		return "", err
	}
	ref := engine.Ref{Workspace: ws.Core, Database: crashDB, Branch: "main"}
	if _, err := e.Schema().CreateTable(ref, crashTable); err != nil {
		return "", err
	}
	for _, c := range crashColumns {
		if _, err := e.Schema().AddColumn(ref, crashTable, c); err != nil {
			return "", err
		}
	}
	return ws.Core, nil
}
