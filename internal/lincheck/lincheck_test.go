package lincheck

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestCheck feeds hand-made histories to the checker: it must accept the
// linearizable ones and reject the others, so a clean verdict elsewhere
// means something.
func TestCheck(t *testing.T) {
	type step struct {
		client     int
		write      bool
		key, value string
		call, ret  int64 // ret < 0: unknown outcome
	}
	f := func(name string, want porcupine.CheckResult, steps ...step) {
		t.Helper()
		r := NewRecorder()
		for _, s := range steps {
			in := Input{Kind: Read, Key: s.key}
			var out any = Output{Value: s.value}
			if s.write {
				in = Input{Kind: Write, Key: s.key, Value: s.value}
				out = nil
			}
			op := porcupine.Operation{ClientId: s.client, Input: in, Call: s.call, Output: out, Return: s.ret}
			if s.ret < 0 {
				op.Return = 1 << 62
			}
			r.ops = append(r.ops, op)
		}
		if got := r.Check(0, ""); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	f("read of a never-written key", porcupine.Ok, step{0, false, "x", "", 0, 1})
	f("read after write", porcupine.Ok, step{0, true, "x", "a", 0, 1}, step{1, false, "x", "a", 2, 3})
	f("stale read after an acknowledged write", porcupine.Illegal,
		step{0, true, "x", "a", 0, 1}, step{1, true, "x", "b", 2, 3}, step{1, false, "x", "a", 4, 5})
	f("concurrent write may be read either way", porcupine.Ok,
		step{0, true, "x", "a", 0, 1}, step{1, true, "x", "b", 2, 10}, step{2, false, "x", "a", 3, 4}, step{2, false, "x", "b", 5, 6})
	f("value flips back", porcupine.Illegal,
		step{0, true, "x", "a", 0, 1}, step{1, true, "x", "b", 2, 10}, step{2, false, "x", "b", 3, 4}, step{2, false, "x", "a", 5, 6})
	f("unknown write may surface late", porcupine.Ok,
		step{0, true, "x", "a", 0, -1}, step{1, false, "x", "", 1, 2}, step{1, false, "x", "a", 3, 4})
	f("unknown write may never surface", porcupine.Ok,
		step{0, true, "x", "a", 0, -1}, step{1, false, "x", "", 5, 6})
	f("read of a value never written", porcupine.Illegal, step{0, false, "x", "z", 0, 1})
	f("keys are independent", porcupine.Illegal,
		step{0, true, "x", "a", 0, 1}, step{0, true, "y", "b", 2, 3}, step{1, false, "y", "", 4, 5})
}

// TestRecorderCounts checks the bookkeeping of the three endings.
func TestRecorderCounts(t *testing.T) {
	r := NewRecorder()
	r.Write(0, "x", "1").Ok("")
	r.Write(0, "x", "2").Unknown()
	r.Write(0, "x", "3").Failed()
	r.Read(1, "x").Ok("2")
	r.Read(1, "x").Failed()
	got := r.Counts()
	want := Counts{WritesOk: 1, WritesUnknown: 1, WritesFailed: 1, ReadsOk: 1, ReadsFailed: 1}
	if got != want || len(r.History()) != 3 {
		t.Fatalf("counts %v, history %d; want %v and 3", got, len(r.History()), want)
	}
	if res := r.Check(0, ""); res != porcupine.Ok {
		t.Fatalf("check: %v", res)
	}
}
