package apply

import (
	"cmp"
	"encoding/binary"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/fts"
)

// Preparing a write of new records. Most of what inserting a record costs
// depends on the record and its table's schema only: converting its
// values, tokenizing its text, and listing the bitmaps it joins. A write
// whose operations all insert into one table works that out in its
// caller's goroutine before it takes the writer lock (or queues for a
// group), so that concurrent writers prepare side by side while another
// commits, and gathers the bitmaps of all its records into posting lists
// by bitmap: under the lock, once its new records have row ids, each
// bitmap takes its rows in one go instead of one staged change per row
// and bitmap.
//
// What is prepared is a cache, not part of the command: it holds for the
// schema it was made from (the table's identity: a schema change copies
// the tables it changes), and the writer works everything out under the
// lock as before when the table changed meanwhile, for a record whose
// values it could not convert (the error is reported from there), and
// for what reads the state: the record's previous version, link targets
// and row ids. Either way the command writes the same bytes.

// prepared is what a write of new records into one table worked out
// before it took the writer lock.
type prepared struct {
	table *model.Table
	// recs are the records' converted fields by operation, nil where
	// converting failed.
	recs []*codec.Record
	// lens are the lengths of each record's text fields.
	lens [][]layers.FieldLength
	// postings are the bitmaps the records join, in id order, each with
	// the operations whose records join it, in increasing order; joins
	// counts these.
	postings []posting
	joins    int
	// known are the remembered words of the table's top layer when the
	// write was prepared, nil if none were; a posting's word found there
	// is marked known.
	known *knownWords
}

// posting is one bitmap that prepared records join.
type posting struct {
	id   string
	term string // the word a term bitmap names, for the vocabulary
	ops  []int32
	// known: the word was remembered as stored when the write was
	// prepared.
	known bool
}

// prepareMinOps is the fewest operations a write prepares for on its
// own: preparing pays for itself once a write holds many records, whose
// bitmaps it gathers. A single-record write prepares only while writes
// of its database are applied in groups (DB.grouping): it waits anyway,
// and its values and words are then converted and tokenized beside the
// writer applying a group rather than by it (prepareOne). A lone
// single-record writer does not: that would only move its work. Tests
// that compare prepared writes with unprepared ones lower it.
var prepareMinOps = 16

// prepare works out c's records and their bitmaps from the state of d
// when every operation of c inserts into one table without conditions,
// and keeps them in c for its application under the writer lock. grouped
// says that c is applied in a group.
func (c *WriteRecords) prepare(d *DB, grouped bool) {
	c.prep = nil
	st := d.State()
	if len(c.Ops) < prepareMinOps && !(grouped && len(c.Ops) == 1) {
		return
	}
	name := c.Ops[0].Table
	for i := range c.Ops {
		op := &c.Ops[i]
		if op.Kind != model.OpInsert || op.Table != name || op.IfVersion != nil {
			return
		}
	}
	br, err := st.Branch(c.Branch)
	if err != nil {
		return
	}
	t, err := br.Schema.Table(name)
	if err != nil {
		return
	}
	for _, col := range t.Leaves {
		if col.Unique || len(c.Ops) == 1 && model.IsFileType(col.Type) {
			// Checking a unique column reads the staged bitmaps record by
			// record; the file a single-record write carries is stored,
			// and its value made final, under the lock (bulk inserts
			// carry none).
			return
		}
	}
	if len(c.Ops) == 1 {
		c.prep = prepareOne(d, br, t, c)
		return
	}
	p := &prepared{
		table: t,
		recs:  make([]*codec.Record, len(c.Ops)),
		lens:  make([][]layers.FieldLength, len(c.Ops)),
	}
	w := &writer{br: br, now: c.Now}
	g := newGatherer(p, len(c.Ops), &d.gatherHint)
	for i := range c.Ops {
		// Writes prepare side by side and may take every processor: they
		// yield as the writer does (yieldEvery), so that a query made
		// runnable meanwhile does not wait for preemption, and let their
		// caller hold them back (Yield).
		if i%yieldEvery == yieldEvery-1 {
			if c.Yield != nil {
				c.Yield()
			}
			runtime.Gosched()
		}
		rec := &codec.Record{}
		if err := w.fill(t, rec, c.Ops[i].Values, true, false); err != nil {
			continue
		}
		p.recs[i] = rec
		g.op = int32(i)
		layers.Visit(t, rec, g)
	}
	g.done(len(c.Ops), &d.gatherHint)
	g.release()
	p.postings = sortPostings(p.postings)
	p.markKnown(d, br)
	c.prep = p
}

// gatherer gathers the postings of the records a write prepares
// (layers.Visitor), looking up the bitmaps that name no word by id and
// the words by column and word: a word's term bitmap and its frequency
// bitmaps are found with one lookup, and their ids are made only the
// first time. It notes each join of a record to a posting in one list,
// in the records' order, and hands each posting its operations once all
// are visited (done), from one array: no posting grows a list of its own.
type gatherer struct {
	p *prepared
	// op is the operation whose record is being visited.
	op   int32
	byID map[string]int32
	// cols are the words met by text column; words and term are by
	// word, term the word itself; seen are the words of the field being
	// counted.
	cols  []colWords
	words []wordPostings
	term  []string
	seen  []int32
	// joins are the joins so far, a posting and an operation each; joined
	// are by posting.
	joins  []join
	joined []joined
	// ids are the ids of the word postings, one after another; spans say
	// where each ends. They are made strings all at once (done), not one
	// by one: a write of 1000 records meets tens of thousands of words.
	ids   []byte
	spans []idSpan
	// spare are the word tables of a write gathered before, emptied, for
	// the columns of this one.
	spare []wordTable
}

// idSpan is where the id of posting k ends in gatherer.ids.
type idSpan struct{ k, to int32 }

// colWords indexes gatherer.words by the words of one text column.
type colWords struct {
	col   uint32
	words wordTable
}

// wordPostings is what a gatherer keeps of one word of a text column, in
// one place since a token's lookup reads all of it.
type wordPostings struct {
	// stamp is the last operation that held the word, tf how many times
	// it did (Tokens).
	stamp, tf int32
	// ks are the word's postings, the term bitmap's then its frequency
	// bitmaps', -1 for those not met yet.
	ks [1 + len(fts.TFLevels)]int32
	// head is the word's first 8 bytes (wordHead).
	head uint64
}

// joined is what a gatherer keeps of one posting: the last operation that
// joined it and how many did.
type joined struct{ last, count int32 }

// join is one record joining one posting.
type join struct{ k, op int32 }

// newGatherer returns a gatherer of the postings of n records into p,
// sized for the postings met at most by the records of a write of this
// size (hint): a write of 1000 records meets tens of thousands.
func newGatherer(p *prepared, n int, hint *gatherHint) *gatherer {
	words, ids, postings, joins, idBytes := hint.sizes(n)
	g := gathererPool.Get().(*gatherer)
	g.p = p
	if g.byID == nil {
		g.byID = make(map[string]int32, ids)
	}
	g.words = reuse(g.words, words)
	g.term = reuse(g.term, words)
	g.joins = reuse(g.joins, joins)
	g.joined = reuse(g.joined, postings)
	g.ids = reuse(g.ids, idBytes)
	g.spans = reuse(g.spans, postings)
	p.postings = make([]posting, 0, postings)
	return g
}

// reuse returns s emptied if it has room for n, else a new slice that has.
func reuse[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

// gathererPool recycles gatherers: a bulk write of 1000 records gathers
// its postings in megabytes of lists and tables, which made anew for every
// write would be zeroed and collected again each time.
var gathererPool = sync.Pool{New: func() any { return new(gatherer) }}

// maxPooledIDBytes is the most bytes of word postings' ids of a gatherer
// that goes back to the pool: one that met a very large write does not
// keep its room.
const maxPooledIDBytes = 16 << 20

// release empties g, once done, and puts it back in the pool. It drops
// what refers to the write's records and postings: their words and ids.
func (g *gatherer) release() {
	if cap(g.ids) > maxPooledIDBytes {
		return
	}
	g.p = nil
	clear(g.byID)
	clear(g.term[:cap(g.term)])
	for i := range g.cols {
		t := g.cols[i].words
		clear(t.slots)
		t.n = 0
		g.spare = append(g.spare, t)
	}
	clear(g.cols)
	g.cols = g.cols[:0]
	gathererPool.Put(g)
}

func (g *gatherer) Bitmap(id []byte) {
	k, ok := g.byID[string(id)]
	if !ok {
		s := string(id)
		k = g.add(s, "")
		g.byID[s] = k
	}
	g.join(k)
	if fl, ok := layers.LengthOfID(id); ok {
		g.p.lens[g.op] = append(g.p.lens[g.op], fl)
	}
}

// Word takes a word counted by the analysis; Visit hands the gatherer
// its tokens instead (Tokens), but a Visitor takes both.
func (g *gatherer) Word(col uint32, term string, n int) {
	g.joinWord(col, g.wordOf(g.colWords(col), term), term, n)
}

// Tokens counts the words of a text field as it looks them up, a word
// repeated being found where the lookup of its first occurrence left it.
func (g *gatherer) Tokens(col uint32, toks []fts.Token) {
	cw := g.colWords(col)
	g.seen = g.seen[:0]
	for _, t := range toks {
		wi := g.wordOf(cw, t.Term)
		wp := &g.words[wi]
		if wp.stamp != g.op {
			wp.stamp, wp.tf = g.op, 0
			g.seen = append(g.seen, wi)
		}
		wp.tf++
	}
	for _, wi := range g.seen {
		g.joinWord(col, wi, g.term[wi], int(g.words[wi].tf))
	}
}

// colWords returns the words met in text column col.
func (g *gatherer) colWords(col uint32) *colWords {
	for i := range g.cols {
		if g.cols[i].col == col {
			return &g.cols[i]
		}
	}
	var t wordTable
	if n := len(g.spare); n > 0 {
		t, g.spare = g.spare[0], g.spare[1:]
	} else {
		t = newWordTable(cap(g.words))
	}
	g.cols = append(g.cols, colWords{col: col, words: t})
	return &g.cols[len(g.cols)-1]
}

// wordOf returns the index of word term of cw in g.words, adding it if
// it is new.
func (g *gatherer) wordOf(cw *colWords, term string) int32 {
	wi, head, added := cw.words.index(term, g.words, g.term)
	if added {
		g.words = append(g.words, wordPostings{stamp: -1, ks: [...]int32{-1, -1, -1, -1}, head: head})
		g.term = append(g.term, term)
	}
	return wi
}

// joinWord joins the record being visited to the postings of word wi of
// column col, term, which it holds n times.
func (g *gatherer) joinWord(col uint32, wi int32, term string, n int) {
	ks := &g.words[wi].ks
	if ks[0] < 0 {
		g.ids = codec.TermBitmapID(g.ids, col, term)
		ks[0] = g.addWord(term)
	}
	g.join(ks[0])
	for i, l := range fts.TFLevels {
		if n < int(l) {
			break
		}
		if ks[i+1] < 0 {
			g.ids = codec.TermTFBitmapID(g.ids, col, uint8(i), term)
			ks[i+1] = g.addWord("")
		}
		g.join(ks[i+1])
	}
}

// add adds a posting of bitmap id, naming word term or "", and returns
// its index.
func (g *gatherer) add(id, term string) int32 {
	g.p.postings = append(g.p.postings, posting{id: id, term: term})
	g.joined = append(g.joined, joined{last: -1})
	return int32(len(g.p.postings) - 1)
}

// addWord adds a posting whose id was just appended to g.ids, naming
// word term or "", and returns its index; the id is set by done.
func (g *gatherer) addWord(term string) int32 {
	k := g.add("", term)
	g.spans = append(g.spans, idSpan{k, int32(len(g.ids))})
	return k
}

// join notes that the record being visited joins posting k.
func (g *gatherer) join(k int32) {
	jd := &g.joined[k]
	if jd.last == g.op {
		return // a value the record holds twice
	}
	jd.last = g.op
	jd.count++
	g.joins = append(g.joins, join{k, g.op})
}

// done gives each posting its operations, in increasing order, and
// remembers the sizes met in hint.
func (g *gatherer) done(n int, hint *gatherHint) {
	ops := make([]int32, len(g.joins))
	at := g.joined // from here on, count is where each posting's next operation goes
	from := int32(0)
	for k := range at {
		c := at[k].count
		at[k].count = from
		from += c
	}
	for _, j := range g.joins {
		ops[at[j.k].count] = j.op
		at[j.k].count++
	}
	from = 0
	for k := range g.p.postings {
		to := at[k].count
		g.p.postings[k].ops = ops[from:to:to]
		from = to
	}
	all := string(g.ids)
	from = 0
	for _, sp := range g.spans {
		g.p.postings[sp.k].id = all[from:sp.to]
		from = sp.to
	}
	g.p.joins = len(g.joins)
	hint.note(n, len(g.words), len(g.byID), len(g.p.postings), len(g.joins), len(g.ids))
}

// gatherHint remembers how many words, other bitmaps, postings, joins and
// bytes of word postings' ids the last write gathering postings met per
// record, so that the next one sizes its maps and lists once rather than
// growing them. It sizes memory only: what a write prepares does not
// depend on it.
type gatherHint struct{ words, ids, postings, joins, idBytes atomic.Int64 }

// hintScale is the number of records gatherHint's sizes are per.
const hintScale = 1024

// sizes returns the sizes for a write of n records: those of the last
// write scaled to n, rounded up, and an eighth more. Writes of like
// records meet a little more or less than one another; a list one short
// of its size would double, copying all it holds.
func (h *gatherHint) sizes(n int) (words, ids, postings, joins, idBytes int) {
	f := func(v *atomic.Int64) int {
		x := (v.Load()*int64(n) + hintScale - 1) / hintScale
		return int(x + x/8)
	}
	return f(&h.words), f(&h.ids), f(&h.postings), f(&h.joins), f(&h.idBytes)
}

func (h *gatherHint) note(n, words, ids, postings, joins, idBytes int) {
	if n == 0 {
		return
	}
	f := func(v *atomic.Int64, x int) { v.Store((int64(x)*hintScale + int64(n) - 1) / int64(n)) }
	f(&h.words, words)
	f(&h.ids, ids)
	f(&h.postings, postings)
	f(&h.joins, joins)
	f(&h.idBytes, idBytes)
}

// markKnown marks the postings whose words are remembered as stored,
// looked up here rather than under the writer lock: a word a table's
// remembered words hold stays there for as long as they are remembered
// (forgetTerms).
func (p *prepared) markKnown(d *DB, br *model.Branch) {
	d.knownMu.RLock()
	p.known = d.knownTerms[layerTable{br.Lineage[0].Layer, p.table.ID}]
	for k := range p.postings {
		if ps := &p.postings[k]; ps.term != "" && p.known.has(ps.term) {
			ps.known = true
		}
	}
	d.knownMu.RUnlock()
}

// sortPostings returns ps in id order, the order in which their keys are
// written, so that staging them (flushJoins) leaves nothing to sort under
// the lock. It sorts keys of the ids' first 16 bytes, which tell most ids
// apart (a word's bitmap id holds its first 9 or 10 bytes) and compare
// as two integers, with the ids' lengths and the postings' indexes: that
// moves less than sorting the postings. A bulk write's tens of thousands
// of keys are sorted by radix (sortKeys), a few by comparing them. Ids of
// at most 16 bytes whose keys are equal are a prefix of one another (a
// word's bitmap id and its frequency bitmaps' ids, one byte longer), the
// shorter first; the strings are compared only where a longer id's keys
// are equal.
func sortPostings(ps []posting) []posting {
	bp := postingKeys.Get().(*[]postingKey)
	buf := slices.Grow((*bp)[:0], 2*len(ps))
	defer func() { *bp = buf[:0]; postingKeys.Put(bp) }()
	keys := buf[:len(ps)]
	for k := range ps {
		var b [16]byte
		copy(b[:], ps[k].id)
		keys[k] = postingKey{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:]), int32(k), int32(len(ps[k].id))}
	}
	tie := func(a, b postingKey) int {
		if a.n <= 16 && b.n <= 16 {
			return cmp.Compare(a.n, b.n)
		}
		return strings.Compare(ps[a.k].id, ps[b.k].id)
	}
	if len(keys) < radixMin {
		slices.SortFunc(keys, func(a, b postingKey) int {
			if c := cmp.Compare(a.hi, b.hi); c != 0 {
				return c
			}
			if c := cmp.Compare(a.lo, b.lo); c != 0 {
				return c
			}
			return tie(a, b)
		})
	} else {
		keys = sortKeys(keys, buf[len(ps):2*len(ps)])
		for i := 0; i < len(keys); {
			j := i + 1
			for j < len(keys) && keys[j].hi == keys[i].hi && keys[j].lo == keys[i].lo {
				j++
			}
			if j-i > 1 {
				slices.SortFunc(keys[i:j], tie)
			}
			i = j
		}
	}
	sorted := make([]posting, len(ps))
	for i, k := range keys {
		sorted[i] = ps[k.k]
	}
	return sorted
}

// postingKey is a posting's sort key: the first 16 bytes of its id, its
// index and its id's length.
type postingKey struct {
	hi, lo uint64
	k, n   int32
}

// postingKeys holds sortPostings' room for keys, a megabyte for a bulk
// write's postings, from one write to the next.
var postingKeys = sync.Pool{New: func() any { return new([]postingKey) }}

// radixMin is the fewest keys sortPostings sorts by radix: below it,
// clearing and reading the counts of 16 bytes costs more than comparing.
const radixMin = 512

// sortKeys sorts keys by hi, then lo, keeping the order of equal ones, a
// byte at a time from the last (a least significant digit radix sort),
// with tmp as room for as many keys; it returns the slice, keys or tmp,
// that holds them sorted. A byte that all keys share is not sorted by:
// the kind and column bytes a write's ids begin with mostly are.
func sortKeys(keys, tmp []postingKey) []postingKey {
	// counts[d] counts the keys by their byte d, 0 being lo's last.
	var counts [16][256]int32
	for _, k := range keys {
		for d := range 8 {
			counts[d][byte(k.lo>>(8*d))]++
			counts[8+d][byte(k.hi>>(8*d))]++
		}
	}
	n := int32(len(keys))
	for d := range 16 {
		c := &counts[d]
		shift := uint(8 * (d % 8))
		first := keys[0].lo
		if d >= 8 {
			first = keys[0].hi
		}
		if c[byte(first>>shift)] == n {
			continue // every key has the same byte d
		}
		var at int32
		for b := range c {
			c[b], at = at, at+c[b]
		}
		if d < 8 {
			for _, k := range keys {
				b := byte(k.lo >> shift)
				tmp[c[b]] = k
				c[b]++
			}
		} else {
			for _, k := range keys {
				b := byte(k.hi >> shift)
				tmp[c[b]] = k
				c[b]++
			}
		}
		keys, tmp = tmp, keys
	}
	return keys
}

// opZero is the operations of a posting of a single-record write.
var opZero = []int32{0}

// prepareOne prepares the one record of c, an insert into table t of
// branch br, or returns nil when its values do not convert. Its postings
// are its bitmaps as they come, their ids in one string: the writer
// stages them as they are, and sorts a group's bitmaps once
// (layers.Pending.Write). A value the record holds twice is a posting
// twice, as when the writer stages the record itself (joinAll).
func prepareOne(d *DB, br *model.Branch, t *model.Table, c *WriteRecords) *prepared {
	rec := &codec.Record{}
	w := &writer{br: br, now: c.Now}
	if err := w.fill(t, rec, c.Ops[0].Values, true, false); err != nil {
		return nil
	}
	p := &prepared{table: t, recs: []*codec.Record{rec}, lens: make([][]layers.FieldLength, 1)}
	sc := oneScratchPool.Get().(*oneScratch)
	layers.VisitMemberships(t, rec, func(id []byte, term string) {
		sc.ids = append(sc.ids, id...)
		sc.spans = append(sc.spans, oneSpan{len(sc.ids), term})
		if fl, ok := layers.LengthOfID(id); ok {
			p.lens[0] = append(p.lens[0], fl)
		}
	})
	all := string(sc.ids)
	p.postings = make([]posting, len(sc.spans))
	from := 0
	for k, sp := range sc.spans {
		p.postings[k] = posting{id: all[from:sp.to], term: sp.term, ops: opZero}
		from = sp.to
	}
	if cap(sc.ids) <= maxOneScratch {
		clear(sc.spans) // the words are the record's, not the pool's
		sc.ids, sc.spans = sc.ids[:0], sc.spans[:0]
		oneScratchPool.Put(sc)
	}
	p.joins = len(p.postings)
	p.markKnown(d, br)
	return p
}

// oneScratch is what prepareOne gathers a record's bitmaps in before it
// copies them out at their size: a record of a long text joins a hundred
// bitmaps and more, which growing these anew for every write would
// allocate several times over.
type oneScratch struct {
	ids   []byte
	spans []oneSpan
}

// oneSpan is where a bitmap id ends in oneScratch.ids, and the word it
// names.
type oneSpan struct {
	to   int
	term string
}

// maxOneScratch is the most bytes of bitmap ids whose scratch goes back
// to the pool: a record of a very long text does not keep its room.
const maxOneScratch = 64 << 10

// oneScratchPool recycles prepareOne's scratch.
var oneScratchPool = sync.Pool{New: func() any { return new(oneScratch) }}

// preparedRec returns the prepared fields of the operation being applied
// into table t, or nil when there are none for t as it is now.
func (w *writer) preparedRec(t *model.Table) *codec.Record {
	if w.prep == nil || w.prep.table != t {
		return nil
	}
	return w.prep.recs[w.op]
}

// checkLinks checks that the links of prepared fields name existing
// records, as filling them under the lock does.
func (w *writer) checkLinks(t *model.Table, fields []codec.Field) error {
	for _, f := range fields {
		c := t.ByID[f.Col]
		if c != nil && c.Type == model.TypeLink && !f.Val.IsNull() {
			if err := w.checkLink(c, f.Val.Str); err != nil {
				return err
			}
		}
	}
	return nil
}

// deferJoin notes that the new row of the operation being applied, whose
// record was prepared, joins its prepared bitmaps, and reports whether it
// did: the bitmaps take their rows when the write's records are all
// applied (flushJoins). It does not once anything else was staged in
// between.
func (w *writer) deferJoin(t *model.Table, row uint32) bool {
	if !w.prepRec || w.noDefer || w.prep.table != t {
		return false
	}
	if w.rows == nil {
		w.rows = make([]uint32, len(w.prep.recs))
	}
	w.rows[w.op] = row
	w.deferred++
	w.tx.changes[len(w.tx.changes)-1].Lens = w.prep.lens[w.op]
	return true
}

// flushJoins stages the deferred rows in their bitmaps, bitmap by bitmap,
// and notes the words new to the layer, but those remembered as stored.
// From then on rows join their bitmaps one by one, so that the changes
// of each bitmap stay in the order they were made.
func (w *writer) flushJoins() {
	if w.deferred == 0 {
		return
	}
	w.noDefer = true
	w.deferred = 0
	p, tx := w.prep, w.tx
	top := w.br.Lineage[0].Layer
	pt := tx.pendingTable(top, p.table.ID)
	pt.Expect(max(len(p.postings), tx.oneBitmaps), max(p.joins, tx.oneJoins))
	known := tx.d.knownTerms[layerTable{top, p.table.ID}]
	// The words found remembered when the write was prepared are still
	// remembered if these are the same remembered words; the others are
	// looked up now.
	same := known != nil && known == p.known
	var terms map[string]struct{}
	rows := make([]uint32, 0, len(w.rows))
	for k := range p.postings {
		ps := &p.postings[k]
		rows = rows[:0]
		for _, i := range ps.ops {
			if r := w.rows[i]; r != 0 {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			continue
		}
		pt.AddRows(ps.id, rows)
		if ps.term != "" && !(same && ps.known) && !known.has(ps.term) {
			if terms == nil {
				terms = tx.termsOf(w.br.ID, p.table.ID)
			}
			terms[ps.term] = struct{}{}
		}
	}
}
