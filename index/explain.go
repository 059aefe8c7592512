package index

// This file describes plans as trees of steps, the one form both the plan
// goldens (testdata/plan) and explain print, and notes what each step did
// while an explained plan runs.

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
)

// ExplainNode is one step of a plan: what it does and, once the plan ran
// with explain on, how many rows it was expected to produce, how many it
// produced and how long it took. The steps of a filter are the planner's
// (see plan.go):
//
//   - live: every row of the table, the plan of no filter;
//   - and, or, not: the set algebra of the filter, an and's children in
//     the order they ran;
//   - postings: equality, lists of values and $exists, read from the
//     ordered index's bitmaps;
//   - range: comparisons and $startsWith, via "ordered range" (a binary
//     search in the column's in-memory order), "column store" (the
//     candidates' in-memory values compared), "ordered index" (a scan of
//     the stored index) or "records";
//   - scan: a row predicate tested on each candidate, via "column store"
//     or "records"; for $contains and $iContains a "trigram" step first
//     narrows the candidates when the column keeps a substring index;
//   - link: a filter on a linked table, its matches mapped back through
//     the link column's postings.
//
// A page is ordered by a walk or a heap (Select): "walk" visits an ordered
// index until the page is full, via "column order" (the in-memory order),
// "ordered index" (the stored one), "id order" (the ids' in-memory order)
// or "id index" (the stored one); "heap" keeps the first
// rows of every candidate's sort key, read via "column store", "id store"
// or "records". A "lazy walk" walks as a walk does but tests each row it
// visits against the filter: under it, each step of the filter has the
// rows it tested as Estimated and those that passed as Actual, and a
// range compares values via "column store". Query, Summarize and the
// engine's search wrap these steps
// in steps of their own, which their documentation names.
//
// Estimated is the most rows the step could produce as known when it
// started: the size of the index structure it reads, or of the candidates
// it was handed, whichever is smaller. Actual is what it produced, never
// more than Estimated. Time includes the step's children.
type ExplainNode struct {
	// Kind names the step: one of the kinds above, or a request's own.
	Kind string
	// Detail says what the step tests or produces: a predicate, an order,
	// a page size; it may be empty.
	Detail string
	// Via is how a step that can reach its rows in several ways did, as
	// decided while running; empty when there is one way or it did not run.
	Via string
	// Estimated, Actual and Time are zero for a step that did not run.
	Estimated uint64
	Actual    uint64
	Time      time.Duration
	// Ran is false in a plan described but not run, and, in a plan that
	// ran, for a step it skipped: an and stops once no candidate is left.
	Ran      bool
	Children []*ExplainNode

	// logged is what Summary prints for a Detail that holds values of the
	// request, written as "?": logs hold no values, which may be a
	// record's. Empty when Detail holds none.
	logged string
}

// step makes a step of a kind and detail.
func step(kind, detail string) *ExplainNode { return &ExplainNode{Kind: kind, Detail: detail} }

// valueStep makes a step whose detail holds values: detail writes it with
// them, or with "?" in their place when hide is set.
func valueStep(kind string, detail func(hide bool) string) *ExplainNode {
	e := step(kind, detail(false))
	e.logged = detail(true)
	return e
}

// head is the start of a step's line: kind, detail and how it ran.
func (n *ExplainNode) head() string {
	s := n.Kind
	if n.Detail != "" {
		s += " " + n.Detail
	}
	if n.Via != "" {
		s += " via " + n.Via
	}
	return s
}

// Outline prints the steps alone, one a line, children indented by two
// spaces under their parent: "kind detail [via how]". It is the form of
// the plan goldens; it ends with a newline.
func (n *ExplainNode) Outline() string {
	var b strings.Builder
	n.write(&b, 0, false, false)
	return b.String()
}

// String prints the steps as Outline does, each step that ran followed by
// ": est N, actual M, <time>", each one skipped by ": skipped".
func (n *ExplainNode) String() string {
	var b strings.Builder
	n.write(&b, 0, true, true)
	return b.String()
}

func (n *ExplainNode) write(b *strings.Builder, depth int, rows, times bool) {
	b.WriteString(strings.Repeat("  ", depth))
	b.WriteString(n.head())
	switch {
	case !rows:
	case !n.Ran:
		b.WriteString(": skipped")
	default:
		b.WriteString(": est " + strconv.FormatUint(n.Estimated, 10) + ", actual " + strconv.FormatUint(n.Actual, 10))
		if times {
			b.WriteString(", " + n.Time.String())
		}
	}
	b.WriteByte('\n')
	for _, c := range n.Children {
		c.write(b, depth+1, rows, times)
	}
}

// Summary prints the tree on one line, for logs: each step as Outline
// prints it but with "?" for the request's values, with its actual rows
// in brackets when it ran, its children in parentheses separated by "; ".
func (n *ExplainNode) Summary() string {
	var b strings.Builder
	n.summary(&b)
	return b.String()
}

func (n *ExplainNode) summary(b *strings.Builder) {
	if n.logged != "" {
		c := *n
		c.Detail = n.logged
		b.WriteString(c.head())
	} else {
		b.WriteString(n.head())
	}
	if n.Ran {
		b.WriteString(" [" + strconv.FormatUint(n.Actual, 10) + " rows]")
	}
	if len(n.Children) == 0 {
		return
	}
	b.WriteByte('(')
	for i, c := range n.Children {
		if i > 0 {
			b.WriteString("; ")
		}
		c.summary(b)
	}
	b.WriteByte(')')
}

// Find returns the first step of a kind in the tree, depth first, or nil.
func (n *ExplainNode) Find(kind string) *ExplainNode {
	if n.Kind == kind {
		return n
	}
	for _, c := range n.Children {
		if f := c.Find(kind); f != nil {
			return f
		}
	}
	return nil
}

// Begin starts timing a step of a request's own: it is marked as run, and
// End adds the time since.
func (n *ExplainNode) Begin() time.Time {
	n.Ran = true
	return time.Now()
}

// End closes a step begun at start with its rows: estimated, then actual.
func (n *ExplainNode) End(start time.Time, est, actual uint64) {
	n.Time += time.Since(start)
	n.Estimated += est
	n.Actual += actual
}

// tracer notes what the steps of one explained execution do. A nil
// *tracer notes nothing: a plan run without explain reads no clock and
// counts nothing.
type tracer struct {
	// steps are the described steps of the plan's nodes.
	steps map[planNode]*ExplainNode
	// frames are the steps running, innermost last.
	frames []frame
	// seq numbers the steps in the order they started.
	seq   int
	order map[*ExplainNode]int
}

// frame is a running step and the estimate noted for it.
type frame struct {
	step  *ExplainNode
	est   uint64
	noted bool
}

// run executes a plan node as its step: counted, timed, its estimate the
// smallest noted while it ran, or derived from its children, and never
// above its candidates.
func (t *tracer) run(x *execCtx, n planNode, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	e := t.steps[n]
	in, err := x.candidates(cand)
	if err != nil {
		return nil, err
	}
	t.seq++
	t.order[e] = t.seq
	t.frames = append(t.frames, frame{step: e})
	start := time.Now()
	out, err := n.exec(x, cand)
	e.Time += time.Since(start)
	f := t.frames[len(t.frames)-1]
	t.frames = t.frames[:len(t.frames)-1]
	if err != nil {
		return nil, err
	}
	est := in.GetCardinality()
	if f.noted {
		est = min(est, f.est)
	} else if d, ok := derivedEstimate(e); ok {
		est = min(est, d)
	}
	e.Ran = true
	e.Estimated += est
	e.Actual += out.GetCardinality()
	return out, nil
}

// derivedEstimate is the estimate of an and or an or from its children's:
// the smallest of an and's, the sum of an or's.
func derivedEstimate(e *ExplainNode) (uint64, bool) {
	switch e.Kind {
	case "and":
		var est uint64
		first := true
		for _, c := range e.Children {
			if c.Ran && (first || c.Estimated < est) {
				est, first = c.Estimated, false
			}
		}
		return est, !first
	case "or":
		var est uint64
		for _, c := range e.Children {
			est += c.Estimated
		}
		return est, true
	}
	return 0, false
}

// estimate notes that the running step produces at most n rows.
func (t *tracer) estimate(n uint64) {
	f := &t.frames[len(t.frames)-1]
	if !f.noted || n < f.est {
		f.est, f.noted = n, true
	}
}

// finish orders the children of every step as they ran, the skipped ones
// last in plan order.
func (t *tracer) finish(e *ExplainNode) {
	slices.SortStableFunc(e.Children, func(a, b *ExplainNode) int {
		oa, ok := t.order[a]
		if !ok {
			oa = t.seq + 1
		}
		ob, ok := t.order[b]
		if !ok {
			ob = t.seq + 1
		}
		return oa - ob
	})
	for _, c := range e.Children {
		t.finish(c)
	}
}

// The notes of plan nodes: each does nothing, and reads no clock, when the
// execution is not explained.

// via notes how the running step reaches its rows.
func (x *execCtx) via(how string) {
	if x.tr != nil {
		x.tr.frames[len(x.tr.frames)-1].step.Via = how
	}
}

// estimateRows notes that the running step produces at most the rows of b.
func (x *execCtx) estimateRows(b *roaring.Bitmap) {
	if x.tr != nil {
		x.tr.estimate(b.GetCardinality())
	}
}

// estimateCount notes that the running step produces at most n rows; n
// must be cheap to compute, or computed only when x.tr is set.
func (x *execCtx) estimateCount(n uint64) {
	if x.tr != nil {
		x.tr.estimate(n)
	}
}

// substep is a step a plan node takes inside its own, such as the trigram
// narrowing of a scan, while it is timed.
type substep struct {
	e     *ExplainNode
	start time.Time
}

// begin starts a step inside the running one that tests a value of the
// request, its rows at most those of in; nil when the execution is not
// explained.
func (x *execCtx) begin(kind string, v codec.Value, in *roaring.Bitmap) *substep {
	if x.tr == nil {
		return nil
	}
	e := step(kind, formatFilterValue(v))
	e.logged = "?"
	e.Ran, e.Estimated = true, in.GetCardinality()
	return &substep{e: e, start: time.Now()}
}

// end closes a step with the rows it left, and adds it to the running step
// when it took place (ok).
func (s *substep) end(x *execCtx, out *roaring.Bitmap, ok bool) {
	if s == nil || !ok {
		return
	}
	s.e.Time = time.Since(s.start)
	s.e.Actual = out.GetCardinality()
	parent := x.tr.frames[len(x.tr.frames)-1].step
	parent.Children = append(parent.Children, s.e)
}
