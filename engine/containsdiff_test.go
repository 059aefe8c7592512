package engine

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestContainsDifferential runs $contains and $iContains through the
// planner, which narrows them with a trigram index kept across writes,
// and checks the matching ids against a model of the rows in a map and a
// naive substring test: random strings with non-ASCII letters whose case
// folding reaches ASCII, arguments shorter than three bytes, of exactly
// one trigram and longer, with repeats, on main and on branches, with
// inserts, updates and deletes between queries. It also pages through the
// first matches in id order, forwards and from the end, with small pages,
// which a walk of the ids tests row by row against the trigram candidates
// (a lazy walk) when the candidates are many: the pages must be the
// model's matches in order, and some walks must have been lazy.
func TestContainsDifferential(t *testing.T) {
	seed := *querySeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -query.seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	e, ref := recFixture(t, map[string][]ColumnDef{"items": {{Name: "s", Type: TypeString}}})
	// K is the Kelvin sign and ſ the long s: they fold with k and s.
	alphabet := []string{"a", "b", "A", "B", "k", "K", "K", "s", "S", "ſ", "é", "É", "ß", "σ", "Σ", "ς", " ", "1", "-"}
	randStr := func(max int) string {
		var b strings.Builder
		for i := rng.Intn(max + 1); i > 0; i-- {
			b.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		return b.String()
	}
	// models holds the value of s of each live id per branch; a nil
	// pointer is a record without one.
	models := map[string]map[string]*string{"main": {}}
	randValue := func() (map[string]any, *string) {
		if rng.Intn(8) == 0 {
			return map[string]any{}, nil
		}
		s := randStr(14)
		if rng.Intn(4) == 0 {
			s += s // repeated trigrams
		}
		return map[string]any{"s": s}, &s
	}
	write := func(branch string) {
		r := Ref{Workspace: ref.Workspace, Database: ref.Database, Branch: branch}
		m := models[branch]
		id := fmt.Sprintf("i%03d", rng.Intn(120))
		if _, ok := m[id]; ok && rng.Intn(4) == 0 {
			if _, err := e.WriteOne(r, Op{Kind: OpDelete, Table: "items", ID: id}); err != nil {
				t.Fatal(err)
			}
			delete(m, id)
			return
		}
		vals, v := randValue()
		if _, err := e.WriteOne(r, Op{Kind: OpInsert, Table: "items", ID: id, Values: vals}); err != nil {
			t.Fatal(err)
		}
		m[id] = v
	}
	randArg := func(branch string) string {
		var vals []string
		for _, v := range models[branch] {
			if v != nil {
				vals = append(vals, *v)
			}
		}
		sort.Strings(vals)
		if len(vals) == 0 || rng.Intn(3) == 0 {
			return randStr(4)
		}
		// A piece of a value, its case changed at random.
		rs := []rune(vals[rng.Intn(len(vals))])
		i := rng.Intn(len(rs) + 1)
		j := i + rng.Intn(len(rs)-i+1)
		piece := string(rs[i:j])
		switch rng.Intn(3) {
		case 0:
			piece = strings.ToUpper(piece)
		case 1:
			piece = strings.ToLower(piece)
		}
		return piece
	}
	lazy := 0
	// page checks up to three pages of a query in id order against want,
	// the matching ids in order.
	page := func(r Ref, filter string, want []string) {
		size := 1 + rng.Intn(3)
		backwards := rng.Intn(3) == 0
		in := QueryRequest{Filter: mustFilter(filter), Page: PageInput{Size: &size}}
		if backwards {
			end := "end"
			in.Page.Before = &end
			want = slices.Clone(want)
			slices.Reverse(want)
		}
		var got []string
		for range 3 {
			res, err := e.Query(ctx, r, "items", in, QueryOptions{})
			if err != nil {
				t.Fatalf("seed %d: query %s on %s: %v", seed, filter, r.Branch, err)
			}
			if strings.Contains(res.Plan.String(), "lazy walk") {
				lazy++
			}
			ids := docIDs(res.Records)
			if backwards {
				slices.Reverse(ids)
			}
			got = append(got, ids...)
			if n := min(len(want), len(got)); !slices.Equal(got[:n], want[:n]) || len(got) > len(want) || res.More != (len(got) < len(want)) {
				t.Fatalf("seed %d: pages of %d of %s on %s (backwards %v): %v, more %v; model %v", seed, size, filter, r.Branch, backwards, got, res.More, want)
			}
			if !res.More {
				break
			}
			c := res.Cursor
			in = QueryRequest{Page: PageInput{After: &c}}
			if backwards {
				in.Page = PageInput{Before: &c}
			}
		}
	}
	check := func(branch string) {
		r := Ref{Workspace: ref.Workspace, Database: ref.Database, Branch: branch}
		arg := randArg(branch)
		for _, op := range []string{"$contains", "$iContains"} {
			raw, _ := json.Marshal(map[string]any{"s": map[string]any{op: arg}})
			d, err := diffFilter(e, r, raw)
			if err != nil {
				t.Fatalf("seed %d: filter %s on %s: %v", seed, raw, branch, err)
			}
			var want []string
			for id, v := range models[branch] {
				if v != nil && naiveContains(*v, arg, op == "$iContains") {
					want = append(want, id)
				}
			}
			sort.Strings(want)
			if fmt.Sprint(d.planner) != fmt.Sprint(want) {
				t.Fatalf("seed %d: filter %s on %s:\nplanner %v\nmodel   %v", seed, raw, branch, d.planner, want)
			}
			page(r, string(raw), want)
		}
	}
	for range 150 {
		write("main")
	}
	branches := []string{"main"}
	n := 1200
	if testing.Short() {
		n = 500
	}
	for i := range n {
		if i%100 == 50 && len(branches) < 4 {
			// Fork from a branch whose index a query built: the fork's
			// copy must follow the fork's own writes.
			from := branches[rng.Intn(len(branches))]
			name := fmt.Sprintf("b%d", i)
			if err := e.Branches().Create(Ref{Workspace: ref.Workspace, Database: ref.Database, Branch: name}, CreateBranchRequest{From: from}); err != nil {
				t.Fatal(err)
			}
			m := map[string]*string{}
			for id, v := range models[from] {
				m[id] = v
			}
			models[name] = m
			branches = append(branches, name)
		}
		b := branches[rng.Intn(len(branches))]
		for range rng.Intn(3) {
			write(b)
		}
		check(branches[rng.Intn(len(branches))])
	}
	if lazy == 0 {
		t.Fatal("no query in id order walked the ids lazily")
	}
	t.Logf("%d pages of lazy walks", lazy)
}

// naiveContains reports whether s contains sub, or when fold a run of runes
// equal to sub's under simple case folding, by trying every place.
func naiveContains(s, sub string, fold bool) bool {
	if !fold {
		for i := 0; i+len(sub) <= len(s); i++ {
			if s[i:i+len(sub)] == sub {
				return true
			}
		}
		return false
	}
	n := utf8.RuneCountInString(sub)
	for i := 0; i <= len(s); {
		j, k := i, 0
		for ; k < n && j < len(s); k++ {
			_, size := utf8.DecodeRuneInString(s[j:])
			j += size
		}
		if k == n && strings.EqualFold(s[i:j], sub) {
			return true
		}
		if i == len(s) {
			break
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return false
}
