package console_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestSignInAndOut: a wrong key is refused with the server's message; the
// right one is kept in session storage (never in a URL) across reloads; a
// deep link asks for the key and then shows the linked page; signing out
// forgets the key.
func TestSignInAndOut(t *testing.T) {
	s := newSession(t, 1280, 800)
	s.open("/console/")
	s.waitFor("#api-key")
	s.fill("#api-key", "not-a-key")
	s.click("form.signin button[type=submit]")
	s.waitText("#signin-error", "invalid API key")
	if got := evalJS[string](s, `sessionStorage.getItem('coppice.console.key') || ''`); got != "" {
		t.Fatalf("a refused key was stored: %q", got)
	}

	s.signIn(testKey)
	s.waitText("#workspaces", s.ws)
	if got := evalJS[string](s, `sessionStorage.getItem('coppice.console.key')`); got != testKey {
		t.Fatalf("session storage holds %q, want the key", got)
	}
	s.waitText("#account", "admin@localhost")

	// A reload keeps the session.
	s.open("/console/w/" + s.ws)
	s.waitText("h1", "Databases")

	// The key never travels in a URL: not in the address, not in any
	// request the page made.
	urls := evalJS[[]string](s, `[location.href, ...performance.getEntriesByType('resource').map((e) => e.name)]`)
	for _, u := range urls {
		if strings.Contains(u, testKey) {
			t.Errorf("the key appears in the URL %s", u)
		}
	}

	s.click("#sign-out")
	s.waitFor("#api-key")
	s.waitText("main", "Signed out.")
	if got := evalJS[string](s, `sessionStorage.getItem('coppice.console.key') || ''`); got != "" {
		t.Fatalf("signing out left the key in session storage")
	}

	// A deep link asks for the key, then shows the page it names.
	s.open("/console/w/" + s.ws + "/settings")
	s.fill("#api-key", testKey)
	s.click("form.signin button[type=submit]")
	s.waitFor("#members")
	if got := s.location(); got != "/console/w/"+s.ws+"/settings" {
		t.Fatalf("after signing in at a deep link the page is %s", got)
	}
}

// TestNavigateToTable clicks from the workspaces to a table; the position
// is in the header and in the URL, and the URL reloads to the same view.
func TestNavigateToTable(t *testing.T) {
	s := newSession(t, 1280, 800)
	s.seedPeople()
	s.signIn(testKey)
	s.click("#workspaces a")
	s.waitFor("#databases")
	s.click("#databases a")
	s.waitFor("#branches")
	s.click(`#branches tr[data-branch="main"] a`)
	s.waitFor("#tables")
	s.click(`#tables tr[data-table="people"] a`)
	s.waitFor("#grid tbody tr[data-id]")
	want := s.tablePath("main")
	if got := s.location(); got != want {
		t.Fatalf("URL %s, want %s", got, want)
	}
	s.waitJS("the branch switcher", `!!document.querySelector('#branch-switch')`)
	crumbs := evalJS[[]string](s, `[...document.querySelectorAll('#crumbs li')].map((li) => li.querySelector('select') ? 'branch:' + li.querySelector('select').value : li.textContent)`)
	if !slices.Equal(crumbs, []string{"Workspaces", s.ws, "app", "branch:main", "people"}) {
		t.Fatalf("position shown: %q", crumbs)
	}
	if got := s.text(`#crumbs li[aria-current="location"]`); got != "people" {
		t.Fatalf("current position %q, want people", got)
	}
	// The address reloads to the same view; back goes to the tables.
	s.open(want)
	s.waitFor("#grid tbody tr[data-id]")
	s.do("back", chromedp.NavigateBack())
	s.ready()
	s.waitFor("#tables")
}

// gridColumn returns the texts of one column of the grid's rows.
func (s *session) gridColumn(col string) []string {
	s.t.Helper()
	return evalJS[[]string](s, fmt.Sprintf(`[...document.querySelectorAll('#grid tbody tr[data-id] td[data-col=%s]')].map((td) => td.textContent)`, js(col)))
}

// TestRecordsGrid: values render by type (links, datetimes, folded JSON,
// files with a download), a header click sorts, cursors page, and the
// filter editor applies filters and shows the server's 400 message next to
// the editor.
func TestRecordsGrid(t *testing.T) {
	s := newSession(t, 1280, 800)
	s.seedPeople()
	s.signIn(testKey)
	s.open(s.tablePath("main"))
	s.waitText("#page-status", "Records 1–20 of 45")
	if n := s.count("#grid tbody tr[data-id]"); n != 20 {
		t.Fatalf("%d rows, want 20", n)
	}
	heads := evalJS[[]string](s, `[...document.querySelectorAll('#grid thead th')].map((th) => th.dataset.col)`)
	if !slices.Equal(heads, []string{"id", "name", "email", "age", "score", "active", "born", "team", "tags", "notes", "bio", "photo"}) {
		t.Fatalf("columns %q do not follow the schema", heads)
	}
	s.docShot("console-records")

	// Values by type.
	p1 := personAt(1)
	row := `#grid tr[data-id="p01"] `
	if href := evalJS[string](s, `document.querySelector('`+row+`td[data-col=team] a').getAttribute('href')`); href != "/console/w/"+s.ws+"/d/app/b/main/t/teams/r/"+p1.team {
		t.Errorf("link cell points to %s", href)
	}
	if got := s.text(row + "td[data-col=born] time"); got != p1.born.Format("2006-01-02 15:04:05")+" UTC" {
		t.Errorf("datetime shows %q", got)
	}
	if open := evalJS[bool](s, `document.querySelector('`+row+`td[data-col=notes] details').open`); open {
		t.Errorf("json is not folded")
	}
	if got := s.text(row + "td[data-col=notes] summary"); got != "{2 keys}" {
		t.Errorf("folded json shows %q", got)
	}
	if got := s.text(row + "td[data-col=photo] .file-name"); got != "hello.txt" {
		t.Errorf("file cell shows %q", got)
	}
	dir := t.TempDir()
	if _, err := chromedp.CallBrowser(s.ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir,
	}); err != nil {
		t.Fatal(err)
	}
	s.click(row + "td[data-col=photo] button.download")
	deadline := time.Now().Add(stepTimeout)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "hello.txt"))
		if err == nil && string(b) == "hello console" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the download did not arrive: %v %q", err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := s.location(); got != s.tablePath("main") {
		t.Fatalf("the download navigated to %s", got)
	}

	// Sort by clicking a header: ascending, descending, off.
	ages := func() []int {
		var out []int
		for _, a := range s.gridColumn("age") {
			n, _ := strconv.Atoi(a)
			out = append(out, n)
		}
		return out
	}
	s.click(`#grid th[data-col="age"]`)
	s.waitJS("ascending sort", `document.querySelector('#grid th[data-col="age"]').getAttribute('aria-sort') === 'ascending'`)
	if a := ages(); !sort.IntsAreSorted(a) || a[0] != 20 {
		t.Fatalf("ages after sorting up: %v", a)
	}
	s.click(`#grid th[data-col="age"]`)
	s.waitJS("descending sort", `document.querySelector('#grid th[data-col="age"]').getAttribute('aria-sort') === 'descending'`)
	if a := ages(); !sort.SliceIsSorted(a, func(i, j int) bool { return a[i] > a[j] }) || a[0] != 59 {
		t.Fatalf("ages after sorting down: %v", a)
	}
	if !strings.Contains(s.location(), "sort=age%3Adesc") {
		t.Fatalf("the sort is not in the URL: %s", s.location())
	}
	s.click(`#grid th[data-col="age"]`)
	s.waitJS("no sort", `document.querySelector('#grid th[data-col="age"]').getAttribute('aria-sort') === 'none'`)

	// Cursor paging in id order.
	ids := func() []string { return s.gridColumn("id") }
	s.click("#page-next")
	s.waitText("#page-status", "Records 21–40 of 45")
	if got := ids(); got[0] != "p21" || got[19] != "p40" {
		t.Fatalf("page 2 holds %v", got)
	}
	s.click("#page-next")
	s.waitText("#page-status", "Records 41–45 of 45")
	if evalJS[bool](s, `!document.querySelector('#page-next').disabled`) {
		t.Fatalf("next is enabled on the last page")
	}
	s.click("#page-prev")
	s.waitText("#page-status", "Records 21–40 of 45")
	if got := ids(); got[0] != "p21" {
		t.Fatalf("back on page 2, first row %s", got[0])
	}
	s.click("#page-first")
	s.waitText("#page-status", "Records 1–20 of 45")
	s.click("#page-last")
	s.waitText("#page-status", "Records 26–45 of 45")
	if got := ids(); got[0] != "p26" || got[19] != "p45" {
		t.Fatalf("last page holds %v", got)
	}

	// Filters: a good one, JSON that does not parse, and the server's 400.
	wantCore := 0
	for i := 1; i <= people; i++ {
		if personAt(i).team == "core" {
			wantCore++
		}
	}
	s.fill("#filter", `{"team": "core"}`)
	s.click("#apply-filter")
	s.waitText("#page-status", fmt.Sprintf("of %d", wantCore))
	if !strings.Contains(s.location(), "filter=") {
		t.Fatalf("the filter is not in the URL: %s", s.location())
	}
	for _, team := range s.gridColumn("team") {
		if team != "core" {
			t.Fatalf("filtered rows include team %s", team)
		}
	}
	s.fill("#filter", `{"team": `)
	s.click("#apply-filter")
	s.waitText("#filter-error", "not valid JSON")
	s.fill("#filter", `{"nope": 1}`)
	s.click("#apply-filter")
	_, body := s.call("POST", s.data("app", "main")+"/tables/people/query", map[string]any{"filter": map[string]any{"nope": 1}})
	s.waitText("#filter-error", body["message"].(string))
	if !evalJS[bool](s, `document.querySelector('.filter-form').contains(document.querySelector('#filter-error'))`) {
		t.Fatalf("the error is not next to the editor")
	}
	// The failed filter left the last good result in place.
	s.waitText("#page-status", fmt.Sprintf("of %d", wantCore))
	s.click("#clear-filter")
	s.waitText("#page-status", "of 45")
	if s.text("#filter-error") != "" || !evalJS[bool](s, `document.querySelector('#filter-error').hidden`) {
		t.Fatalf("the error stayed after a good query")
	}
}

// focused returns the grid coordinates of the focused element, "r,c".
func (s *session) focused() string {
	s.t.Helper()
	return evalJS[string](s, `(() => { const d = document.activeElement.dataset; return d.r + ',' + d.c; })()`)
}

// TestGridKeyboard moves through the grid with the keyboard: arrows,
// Home/End, Enter on a header to sort, PageDown/PageUp to page, Enter on
// a row to open its record; one cell at a time is in the tab order.
func TestGridKeyboard(t *testing.T) {
	s := newSession(t, 1280, 800)
	s.seedPeople()
	s.signIn(testKey)
	s.open(s.tablePath("main"))
	s.waitText("#page-status", "Records 1–20 of 45")
	// Tab from the last control before the grid lands on its first cell.
	s.do("focus", chromedp.Focus(chromedp.CSS("#page-size")))
	s.keys(kb.Tab)
	step := func(want string, keys ...string) {
		t.Helper()
		s.keys(keys...)
		if got := s.focused(); got != want {
			t.Fatalf("after %q focus is on %s, want %s", keys, got, want)
		}
	}
	step("1,0")
	step("1,1", kb.ArrowRight)
	step("3,1", kb.ArrowDown, kb.ArrowDown)
	step("3,11", kb.End)
	step("3,0", kb.Home)
	step("0,0", kb.ArrowUp, kb.ArrowUp, kb.ArrowUp, kb.ArrowUp)
	step("0,3", kb.ArrowRight, kb.ArrowRight, kb.ArrowRight)
	if n := s.count(`#grid [tabindex="0"]`); n != 1 {
		t.Fatalf("%d grid cells in the tab order, want 1", n)
	}
	if n := s.count(`#grid :is(a, button, summary, input, select, textarea):not([tabindex="-1"])`); n != 0 {
		t.Fatalf("%d controls inside the grid are in the tab order", n)
	}
	s.keys(kb.Enter)
	s.waitJS("sort by keyboard", `document.querySelector('#grid th[data-col="age"]').getAttribute('aria-sort') === 'ascending'`)
	if got := s.focused(); got != "0,3" {
		t.Fatalf("after sorting focus is on %s", got)
	}
	s.keys(kb.Enter)
	s.waitJS("sort down by keyboard", `document.querySelector('#grid th[data-col="age"]').getAttribute('aria-sort') === 'descending'`)
	s.keys(kb.Enter)
	s.waitJS("no sort", `document.querySelector('#grid th[data-col="age"]').getAttribute('aria-sort') === 'none'`)
	step("1,3", kb.ArrowDown)
	s.keys(kb.PageDown)
	s.waitText("#page-status", "Records 21–40 of 45")
	if got := s.focused(); got != "1,3" {
		t.Fatalf("after PageDown focus is on %s", got)
	}
	s.keys(kb.PageUp)
	s.waitText("#page-status", "Records 1–20 of 45")
	// Space unfolds a folded value (notes, column 9).
	step("2,9", kb.ArrowDown, kb.End, kb.ArrowLeft, kb.ArrowLeft)
	s.keys(" ")
	s.waitJS("unfolded notes", `document.querySelector('#grid tr[data-id="p02"] td[data-col="notes"] details').open`)
	step("2,3", kb.Home, kb.ArrowRight, kb.ArrowRight, kb.ArrowRight)
	s.keys(kb.Enter)
	s.waitFor("#record-form")
	if got := s.location(); got != s.tablePath("main")+"/r/p02" {
		t.Fatalf("Enter opened %s", got)
	}
}
