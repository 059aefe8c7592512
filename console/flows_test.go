package console_test

import (
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"
)

// record reads a record through the API.
func (s *session) record(branch, table, id string) map[string]any {
	s.t.Helper()
	return s.must(200, "GET", s.data("app", branch)+"/tables/"+table+"/data/"+id, nil)
}

// TestRecordEdit edits a record and sees the change through the API; a
// value the server refuses shows the server's message; a record is
// inserted (a unique violation first) and deleted.
func TestRecordEdit(t *testing.T) {
	s := newSession(t, 1280, 800)
	s.seedPeople()
	s.signIn(testKey)
	s.open(s.tablePath("main"))
	s.click(`#grid tr[data-id="p02"] td[data-col="age"]`)
	s.waitFor("#record-form")
	if got := s.location(); got != s.tablePath("main")+"/r/p02" {
		t.Fatalf("a row click opened %s", got)
	}
	s.waitText("#record-meta", "version 0")
	s.fill("#field-name", "Renamed Person")
	s.fill("#field-age", "77")
	s.click("#save-record")
	s.waitText(".flash", "Saved: version 1.")
	rec := s.record("main", "people", "p02")
	if rec["name"] != "Renamed Person" || rec["age"] != 77.0 {
		t.Fatalf("the API sees %v", rec)
	}
	if got := evalJS[string](s, `document.querySelector('#field-name').value`); got != "Renamed Person" {
		t.Fatalf("the form shows %q after saving", got)
	}
	s.click("#save-record")
	s.waitText("#record-status", "Nothing changed.")

	// The server validates; its message is shown and nothing changes.
	_, refused := s.call("PATCH", s.data("app", "main")+"/tables/people/data/p02", map[string]any{"age": "abc"})
	s.fill("#field-age", "abc")
	s.click("#save-record")
	s.waitText("#record-error", refused["message"].(string))
	if rec := s.record("main", "people", "p02"); rec["age"] != 77.0 {
		t.Fatalf("a refused edit changed the record: %v", rec)
	}

	// Insert: the unique email of another record is refused first.
	s.open(s.tablePath("main"))
	s.click("#insert-record")
	s.waitText("h1", "New record in people")
	s.fill("#field-id", "p99")
	s.fill("#field-name", "New Person")
	s.fill("#field-email", "p01@example.com")
	s.fill("#field-age", "5")
	s.choose("#field-active", "true")
	s.fill("#field-born", "2024-03-04T05:06:07Z")
	s.fill("#field-team", "web")
	s.fill("#field-tags", "x\ny")
	s.click("#save-record")
	s.waitText("#record-error", "not unique")
	s.fill("#field-email", "new@example.com")
	s.click("#save-record")
	s.waitText(".flash", "Record p99 inserted.")
	if got := s.location(); got != s.tablePath("main")+"/r/p99" {
		t.Fatalf("after inserting the page is %s", got)
	}
	rec = s.record("main", "people", "p99")
	team, _ := rec["team"].(map[string]any)
	tags := fmt.Sprint(rec["tags"])
	if rec["name"] != "New Person" || rec["age"] != 5.0 || rec["active"] != true || team["id"] != "web" ||
		tags != "[x y]" || rec["born"] != "2024-03-04T05:06:07.000Z" || rec["email"] != "new@example.com" {
		t.Fatalf("the API sees %v", rec)
	}

	// Delete, confirmed.
	s.click("#delete-record")
	s.waitText("#delete-record", "Confirm delete")
	s.click("#delete-record")
	s.waitText(".flash", "Record p99 deleted.")
	if got := s.location(); got != s.tablePath("main") {
		t.Fatalf("after deleting the page is %s", got)
	}
	if code, _ := s.call("GET", s.data("app", "main")+"/tables/people/data/p99", nil); code != 404 {
		t.Fatalf("the deleted record answers %d", code)
	}
}

// markTexts returns the texts of the <mark> elements under sel.
func (s *session) markTexts(sel string) []string {
	s.t.Helper()
	return evalJS[[]string](s, fmt.Sprintf(`[...document.querySelectorAll(%s)].map((m) => m.textContent)`, js(sel+" mark")))
}

// TestSearchHighlight searches with a typo and sees the highlighted
// words; markup in a value stays text around the marks; the branch-wide
// search finds records of any table.
func TestSearchHighlight(t *testing.T) {
	s := newSession(t, 1280, 800)
	s.seedPeople()
	s.must(201, "PUT", s.data("app", "main")+"/tables/people/data/p50", map[string]any{
		"name": "Eve <em>mark</em> & co", "email": "eve@example.com",
	})
	s.signIn(testKey)
	s.open(s.tablePath("main") + "/search")
	s.fill("#search-q", "hikng")
	s.click(".search-form button[type=submit]")
	s.waitFor("#search-results .hit")
	want := 0
	for i := 1; i <= people; i++ {
		if strings.Contains(personAt(i).bio, "hiking") {
			want++
		}
	}
	if n := s.count("#search-results .hit"); n != want {
		t.Fatalf("%d results for a typo of hiking, want %d", n, want)
	}
	marks := s.markTexts("#search-results")
	if len(marks) < want {
		t.Fatalf("%d highlights, want one per result: %q", len(marks), marks)
	}
	for _, m := range marks {
		if m != "hiking" {
			t.Fatalf("highlight %q, want hiking", m)
		}
	}
	if !strings.Contains(s.location(), "q=hikng") {
		t.Fatalf("the query is not in the URL: %s", s.location())
	}

	// A value with markup: its text shows as it is, only the match is marked.
	s.fill("#search-q", "mark")
	s.click(".search-form button[type=submit]")
	s.waitFor(`#search-results .hit[data-id="p50"]`)
	frag := `#search-results .hit[data-id="p50"] .fragment`
	if got := s.text(frag); got != "Eve <em>mark</em> & co" {
		t.Fatalf("fragment shows %q", got)
	}
	if got := s.markTexts(frag); len(got) != 1 || got[0] != "mark" {
		t.Fatalf("marks %q, want [mark]", got)
	}
	if n := s.count("#search-results em, #search-results b"); n != 0 {
		t.Fatalf("%d elements came from record values", n)
	}

	// The whole branch.
	s.open("/console/w/" + s.ws + "/d/app/b/main")
	s.fill("#search-q", "sourdugh")
	s.click(".search-form button[type=submit]")
	s.waitFor("#search-results .hit")
	if got := s.location(); !strings.HasPrefix(got, "/console/w/"+s.ws+"/d/app/b/main/search?q=sourdugh") {
		t.Fatalf("branch search at %s", got)
	}
	if got := evalJS[string](s, `document.querySelector('#search-results .hit').dataset.table`); got != "people" {
		t.Fatalf("branch search found a record of %q", got)
	}
	for _, m := range s.markTexts("#search-results") {
		if m != "sourdough" {
			t.Fatalf("highlight %q, want sourdough", m)
		}
	}
}

// TestValuesRenderAsText stores markup that would run a script if it
// were parsed as HTML, and shows it in the grid, the record editor, a
// folded JSON value and search results: it stays text, no element is
// created and nothing runs. Trusted Types refuse string-to-HTML sinks.
func TestValuesRenderAsText(t *testing.T) {
	s := newSession(t, 1280, 800)
	s.seedPeople()
	payload := `<img src=x onerror="coppiceReport('xss: an injected script ran')">`
	script := `<script>coppiceReport('xss: a script element ran')</script>`
	s.must(201, "PUT", s.data("app", "main")+"/tables/people/data/p60", map[string]any{
		"name": payload, "email": "x@example.com", "bio": payload + " hiking",
		"tags": []string{payload, script}, "notes": `{"html": ` + js(payload) + `}`,
	})
	s.signIn(testKey)
	noMarkup := func(where string) {
		t.Helper()
		if n := s.count("img, script:not([src]), [onerror]"); n != 0 {
			t.Fatalf("%s: %d elements came from record values", where, n)
		}
	}

	s.open(s.tablePath("main") + "?filter=" + url.QueryEscape(`{"id": "p60"}`))
	s.waitFor(`#grid tr[data-id="p60"]`)
	row := `#grid tr[data-id="p60"] `
	if got := s.text(row + `td[data-col="name"]`); got != payload {
		t.Fatalf("name cell shows %q", got)
	}
	chips := evalJS[[]string](s, `[...document.querySelectorAll('`+row+`.chip')].map((c) => c.textContent)`)
	if len(chips) != 2 || chips[0] != payload || chips[1] != script {
		t.Fatalf("tags show %q", chips)
	}
	s.click(row + `td[data-col="notes"] summary`)
	if got := s.text(row + `td[data-col="notes"] pre`); !strings.Contains(got, `"html": "<img src=x onerror=\"coppiceReport`) {
		t.Fatalf("folded json shows %q", got)
	}
	noMarkup("grid")

	s.open(s.tablePath("main") + "/r/p60")
	s.waitFor("#record-form")
	if got := evalJS[string](s, `document.querySelector('#field-name').value`); got != payload {
		t.Fatalf("editor shows %q", got)
	}
	noMarkup("record")

	s.open(s.tablePath("main") + "/search?q=onerror")
	s.waitFor(`#search-results .hit[data-id="p60"]`)
	if got := s.text(`#search-results .hit[data-id="p60"] dd`); !strings.Contains(got, `<img src=x onerror="coppiceReport(`) {
		t.Fatalf("search shows %q", got)
	}
	if len(s.markTexts("#search-results")) == 0 {
		t.Fatalf("no highlight")
	}
	noMarkup("search")
	time.Sleep(200 * time.Millisecond) // an image error handler would have run by now

	// Trusted Types: assigning a string to innerHTML throws (and reports a
	// violation, which this test expects).
	got := evalJS[string](s, `(() => { try { document.createElement('div').innerHTML = '<b>x</b>'; return 'assigned'; } catch (e) { return e.name; } })()`)
	if got != "TypeError" {
		t.Fatalf("innerHTML with a string: %s, want a TypeError", got)
	}
	s.expectProblem("require-trusted-types-for")
}

// expectProblem waits for a page problem containing want and removes it.
func (s *session) expectProblem(want string) {
	s.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for time.Now().Before(deadline) {
		chromium.mu.Lock()
		for i, p := range s.problems {
			if strings.Contains(p, want) {
				s.problems = append(s.problems[:i], s.problems[i+1:]...)
				chromium.mu.Unlock()
				return
			}
		}
		chromium.mu.Unlock()
		time.Sleep(25 * time.Millisecond)
	}
	s.t.Fatalf("the page reported no problem with %q", want)
}

// TestBranches creates a branch from main, writes on it through the
// console, and sees main unchanged; switches branches; maps a git branch;
// deletes the branch.
func TestBranches(t *testing.T) {
	s := newSession(t, 1280, 800)
	s.seedPeople()
	s.signIn(testKey)
	s.open("/console/w/" + s.ws + "/d/app")
	s.waitFor(`#branches tr[data-branch="main"]`)
	s.fill("#new-branch-name", "dev")
	s.choose("#new-branch-from", "main")
	s.click("#create-branch button[type=submit]")
	s.waitText(".flash", "Branch dev created from main.")
	if got := s.location(); got != "/console/w/"+s.ws+"/d/app/b/dev" {
		t.Fatalf("after creating the branch the page is %s", got)
	}
	s.click(`#tables tr[data-table="people"] a`)
	s.click(`#grid tr[data-id="p01"] td[data-col="age"]`)
	s.waitFor("#record-form")
	s.fill("#field-name", "Dev Person")
	s.click("#save-record")
	s.waitText(".flash", "Saved")
	if got := s.record("dev", "people", "p01")["name"]; got != "Dev Person" {
		t.Fatalf("dev has %v", got)
	}
	if got := s.record("main", "people", "p01")["name"]; got != "Person 01" {
		t.Fatalf("main has %v: the branch is not isolated", got)
	}

	// The switcher keeps the table.
	s.open(s.tablePath("dev"))
	s.waitFor("#branch-switch option[value=main]")
	s.choose("#branch-switch", "main")
	s.waitJS("main's grid", fmt.Sprintf(`location.pathname === %s && !!document.querySelector('#grid tr[data-id="p01"]')`, js(s.tablePath("main"))))
	s.ready()
	if got := s.text(`#grid tr[data-id="p01"] td[data-col="name"]`); got != "Person 01" {
		t.Fatalf("main's grid shows %q", got)
	}
	s.choose("#branch-switch", "dev")
	s.waitJS("dev's grid", fmt.Sprintf(`location.pathname === %s`, js(s.tablePath("dev"))))
	s.ready()
	s.waitText(`#grid tr[data-id="p01"] td[data-col="name"]`, "Dev Person")

	// Git mapping.
	s.open("/console/w/" + s.ws + "/d/app")
	s.fill("#git-branch", "feature/login")
	s.choose("#git-target", "dev")
	s.click("#add-git-mapping button[type=submit]")
	s.waitText("#git-mappings", "feature/login")
	s.waitText("#git-mappings", "dev")
	res := s.must(200, "GET", "/ws/"+s.ws+"/dbs/app/resolveBranch?gitBranch=feature/login", nil)
	if res["branch"] != "dev" {
		t.Fatalf("feature/login resolves to %v", res)
	}
	s.click("#git-mappings button.danger")
	s.click("#git-mappings button.danger")
	s.waitText("#git-mappings", "No git branch is mapped.")

	// Delete dev.
	del := `#branches tr[data-branch="dev"] [data-action="delete-branch"]`
	s.click(del)
	s.waitText(del, "Delete dev?")
	s.click(del)
	s.waitText(".flash", "Branch dev deleted.")
	if code, _ := s.call("GET", s.data("app", "dev"), nil); code != 404 {
		t.Fatalf("the deleted branch answers %d", code)
	}
	if n := s.count(`#branches tr[data-branch="dev"]`); n != 0 {
		t.Fatalf("the deleted branch is still listed")
	}
}

// chartNumber formats a value as the console does.
func chartNumber(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprintf("%.2f", v)
}

// summaryRows returns the rows of the summary table as "key=value".
func (s *session) summaryRows() []string {
	s.t.Helper()
	return evalJS[[]string](s, `[...document.querySelectorAll('#summary-table tbody tr')].map((tr) => tr.cells[0].textContent + '=' + tr.cells[1].textContent)`)
}

// TestSummaryChart groups by a column with count and average, drawn as
// bars and listed in a table, and draws a datetime column's
// dateHistogram as a time series.
func TestSummaryChart(t *testing.T) {
	s := newSession(t, 1280, 800)
	s.seedPeople()
	s.signIn(testKey)
	s.open(s.tablePath("main") + "/summary")
	s.choose("#sum-by", "team")
	s.choose("#sum-fn", "count")
	s.rerendered(func() { s.click("#sum-run") })
	s.waitText(".summary-out h2", "count by team")
	s.waitFor("#bar-chart g.row")
	counts := map[string]float64{}
	ages := map[string][]float64{}
	months := map[string]float64{}
	for i := 1; i <= people; i++ {
		p := personAt(i)
		counts[p.team]++
		ages[p.team] = append(ages[p.team], float64(p.age))
		months[p.born.Format("2006-01")]++
	}
	var want []string
	for team, n := range counts {
		want = append(want, team+"="+chartNumber(n))
	}
	got := s.summaryRows()
	sort.Strings(want)
	sorted := append([]string(nil), got...)
	sort.Strings(sorted)
	if strings.Join(sorted, " ") != strings.Join(want, " ") {
		t.Fatalf("count by team: %q, want %q", got, want)
	}
	// Bars: one per group, longest for the largest count, in table order.
	bars := evalJS[[][]any](s, `[...document.querySelectorAll('#bar-chart g.row')].map((g) => [g.dataset.label, Number(g.querySelector('rect').getAttribute('width'))])`)
	if len(bars) != len(counts) {
		t.Fatalf("%d bars for %d groups", len(bars), len(counts))
	}
	for i := 1; i < len(bars); i++ {
		if bars[i][1].(float64) > bars[i-1][1].(float64) {
			t.Fatalf("bars are not in descending order: %v", bars)
		}
		if counts[bars[i][0].(string)] > counts[bars[i-1][0].(string)] {
			t.Fatalf("bar order does not follow the counts: %v", bars)
		}
	}
	s.docShot("console-summary")

	// Average of age by team.
	s.choose("#sum-fn", "average")
	s.choose("#sum-of", "age")
	s.rerendered(func() { s.click("#sum-run") })
	s.waitText(".summary-out h2", "average of age by team")
	s.waitFor("#bar-chart g.row")
	want = want[:0]
	for team, list := range ages {
		sum := 0.0
		for _, a := range list {
			sum += a
		}
		want = append(want, team+"="+chartNumber(sum/float64(len(list))))
	}
	sort.Strings(want)
	got = s.summaryRows()
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("average age by team: %q, want %q", got, want)
	}

	// A datetime column: the dateHistogram as a time series.
	s.choose("#sum-by", "born")
	s.choose("#sum-fn", "count")
	s.choose("#sum-interval", "month")
	s.rerendered(func() { s.click("#sum-run") })
	s.waitText(".summary-out h2", "count by month of born")
	s.waitFor("#time-chart circle.point")
	if loc := s.location(); !strings.Contains(loc, "by=born") || !strings.Contains(loc, "interval=month") {
		t.Fatalf("the summary is not in the URL: %s", loc)
	}
	want = want[:0]
	for m, n := range months {
		want = append(want, m+"="+chartNumber(n))
	}
	sort.Strings(want)
	got = s.summaryRows()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("count by month: %q, want %q", got, want)
	}
	if n := s.count("#time-chart circle.point"); n != len(months) {
		t.Fatalf("%d points for %d months", n, len(months))
	}
	if n := s.count("#time-chart path.line"); n != 1 {
		t.Fatalf("%d lines", n)
	}
	s.screenshot("time-series")
}

// TestSchemaEdits creates a table, adds columns of several kinds (a bad
// name refused with the server's message) and renames one.
func TestSchemaEdits(t *testing.T) {
	s := newSession(t, 1280, 800)
	s.seedPeople()
	s.signIn(testKey)
	s.open("/console/w/" + s.ws + "/d/app/b/main")
	s.fill("#new-table-name", "projects")
	s.click("#create-table button[type=submit]")
	s.waitText(".flash", "Table projects created")
	schemaPath := "/console/w/" + s.ws + "/d/app/b/main/t/projects/schema"
	if got := s.location(); got != schemaPath {
		t.Fatalf("after creating the table the page is %s", got)
	}
	add := func(name, typ string, setup func()) {
		t.Helper()
		s.fill("#col-name", name)
		s.choose("#col-type", typ)
		if setup != nil {
			setup()
		}
		s.click("#add-column button[type=submit]")
		s.waitText(".flash", "Column "+name+" added.")
		s.waitFor(fmt.Sprintf(`#columns tr[data-column=%s]`, js(name)))
	}
	add("title", "string", func() {
		s.click("#col-notnull")
		s.fill("#col-default", "untitled")
	})
	add("budget", "int", nil)
	add("lead", "link", func() {
		if evalJS[bool](s, `document.querySelector('#col-link').closest('.field').hidden`) {
			t.Fatalf("the link target is hidden for a link column")
		}
		s.choose("#col-link", "teams")
	})
	if got := s.text(`#columns tr[data-column="title"]`); !strings.Contains(got, `not null, default "untitled"`) {
		t.Fatalf("title's row shows %q", got)
	}
	if got := s.text(`#columns tr[data-column="lead"]`); !strings.Contains(got, "links to teams") {
		t.Fatalf("lead's row shows %q", got)
	}

	// A bad name: the server's message.
	_, refused := s.call("POST", s.data("app", "main")+"/tables/projects/columns", map[string]any{"name": "bad name", "type": "string"})
	s.fill("#col-name", "bad name")
	s.choose("#col-type", "string")
	s.click("#add-column button[type=submit]")
	s.waitText("#add-column-error", refused["message"].(string))

	// Rename budget to cost.
	s.click(`#columns tr[data-column="budget"] [data-action="rename"]`)
	s.fill("#rename-budget", "cost")
	s.click(`#columns tr[data-column="budget"] form.rename button[type=submit]`)
	s.waitText(".flash", "Column budget renamed to cost.")
	s.waitFor(`#columns tr[data-column="cost"]`)

	cols := s.must(200, "GET", s.data("app", "main")+"/tables/projects/columns", nil)["columns"].([]any)
	var got []string
	for _, c := range cols {
		m := c.(map[string]any)
		desc := m["name"].(string) + ":" + m["type"].(string)
		if l, ok := m["link"].(map[string]any); ok {
			desc += ">" + l["table"].(string)
		}
		if m["notNull"] == true {
			desc += "!" + fmt.Sprint(m["defaultValue"])
		}
		got = append(got, desc)
	}
	if strings.Join(got, " ") != "title:string!untitled cost:int lead:link>teams" {
		t.Fatalf("the API sees columns %q", got)
	}
	s.open("/console/w/" + s.ws + "/d/app/b/main/t/projects")
	s.waitFor(`#grid th[data-col="cost"]`)
}

// TestWorkspaceSettings: members and their roles, invites (created with
// the key shown once, role changed, deleted), API keys (created with the
// secret shown once, working, revoked) and the workspace's name.
func TestWorkspaceSettings(t *testing.T) {
	s := newSession(t, 1280, 800)
	s.signIn(testKey)
	settings := "/console/w/" + s.ws + "/settings"
	s.open(settings)
	me := fmt.Sprintf(`#members tr[data-user=%s]`, js(s.userID))
	s.waitFor(me)
	if got := evalJS[string](s, `document.querySelector('`+me+` select').value`); got != "owner" {
		t.Fatalf("the bootstrap user is %s", got)
	}
	s.waitText(me, "you")

	// Invite Bob; change the invite's role; Bob accepts it.
	bob := s.must(201, "POST", "/admin/users", map[string]any{"email": "bob@example.com", "fullname": "Bob"})
	bobKey := bob["key"].(string)
	bobID := bob["user"].(map[string]any)["id"].(string)
	s.fill("#invite-email", "bob@example.com")
	s.choose("#invite-role", "maintainer")
	s.click("#invite-form button[type=submit]")
	s.waitText("#invite-key", "ik_")
	inviteKey := s.text("#invite-key")
	inv := `#invites tr[data-email="bob@example.com"]`
	s.waitFor(inv)
	s.choose(inv+" select", "owner")
	s.waitJS("the new role", `document.querySelector('`+inv+` select').value === 'owner' && !document.querySelector('#invite-key')`)
	members := s.must(200, "GET", "/workspaces/"+s.ws+"/members", nil)
	if invs := members["invites"].([]any); len(invs) != 1 || invs[0].(map[string]any)["role"] != "owner" {
		t.Fatalf("invites through the API: %v", invs)
	}
	if code, out := s.callWith(bobKey, "POST", "/workspaces/"+s.ws+"/invites/"+inviteKey+"/accept", nil); code != 204 {
		t.Fatalf("accept with the shown key: %d %v", code, out)
	}

	// Bob is a member: make him a maintainer, then remove him.
	s.open(settings)
	row := fmt.Sprintf(`#members tr[data-user=%s]`, js(bobID))
	s.waitFor(row)
	if got := evalJS[string](s, `document.querySelector('`+row+` select').value`); got != "owner" {
		t.Fatalf("Bob joined as %s", got)
	}
	// The list is drawn again once the server answered.
	evalJS[string](s, `document.querySelector('`+row+`').dataset.stale = '1'`)
	s.choose(row+" select", "maintainer")
	s.waitJS("Bob's new role", `document.querySelector('`+row+`:not([data-stale]) select').value === 'maintainer'`)
	roleOf := func(id string) string {
		for _, m := range s.must(200, "GET", "/workspaces/"+s.ws+"/members", nil)["members"].([]any) {
			if m.(map[string]any)["userId"] == id {
				return m.(map[string]any)["role"].(string)
			}
		}
		return ""
	}
	if got := roleOf(bobID); got != "maintainer" {
		t.Fatalf("Bob's role through the API: %q", got)
	}
	// The last owner cannot step down: the server's message.
	s.choose(me+" select", "maintainer")
	s.waitText("#members-box-error", "owner")
	if got := roleOf(s.userID); got != "owner" {
		t.Fatalf("the last owner became %q", got)
	}
	s.click(row + ` [data-action="remove-member"]`)
	s.click(row + ` [data-action="remove-member"]`)
	s.waitJS("Bob removed", `!document.querySelector('`+row+`')`)
	if got := roleOf(bobID); got != "" {
		t.Fatalf("Bob is still a member (%s)", got)
	}

	// Another invite, deleted.
	s.fill("#invite-email", "carol@example.com")
	s.click("#invite-form button[type=submit]")
	s.waitFor(`#invites tr[data-email="carol@example.com"]`)
	del := `#invites tr[data-email="carol@example.com"] [data-action="delete-invite"]`
	s.click(del)
	s.click(del)
	s.waitFor("#invites-empty")
	if invs := s.must(200, "GET", "/workspaces/"+s.ws+"/members", nil)["invites"].([]any); len(invs) != 0 {
		t.Fatalf("invites left: %v", invs)
	}

	// An API key: its secret is shown once, works, and stops working when
	// revoked.
	s.fill("#key-name", "ci")
	s.click("#key-form button[type=submit]")
	s.waitFor("#new-key-secret")
	secret := s.text("#new-key-secret")
	if code, _ := s.callWith(secret, "GET", "/user", nil); code != 200 || secret == "" {
		t.Fatalf("the shown secret %q answers %d", secret, code)
	}
	if got := s.must(200, "GET", "/workspaces", nil); len(got["workspaces"].([]any)) != 1 {
		t.Fatalf("workspaces: %v", got)
	}
	s.open(settings)
	s.waitFor(`#keys tr[data-key="ci"]`)
	if strings.Contains(evalJS[string](s, `document.body.innerText`), secret) {
		t.Fatalf("the secret is shown again")
	}
	revoke := `#keys tr[data-key="ci"] [data-action="revoke-key"]`
	s.click(revoke)
	s.click(revoke)
	s.waitJS("the key revoked", `!document.querySelector('#keys tr[data-key="ci"]')`)
	if code, _ := s.callWith(secret, "GET", "/user", nil); code != 401 {
		t.Fatalf("the revoked key answers %d", code)
	}

	// The workspace's name.
	s.fill("#ws-name", "Acme")
	s.click(`form:has(#ws-name) button[type=submit]`)
	s.waitJS("saved", `!document.querySelector('#ws-saved').hidden`)
	if got := s.must(200, "GET", "/workspaces/"+s.ws, nil)["name"]; got != "Acme" {
		t.Fatalf("the workspace is named %v", got)
	}
}

// TestNarrowViewport uses the console 390 px wide: nothing overflows the
// page sideways, the grid scrolls in its own box, and paging, records,
// summaries and settings work.
func TestNarrowViewport(t *testing.T) {
	const width = 390
	s := newSession(t, width, 844)
	s.seedPeople()
	s.signIn(testKey)
	fits := func(where string) {
		t.Helper()
		if w := evalJS[int](s, `document.documentElement.scrollWidth`); w > width {
			t.Fatalf("%s: the page is %d px wide", where, w)
		}
	}
	within := func(sel string) {
		t.Helper()
		r := evalJS[[]float64](s, fmt.Sprintf(`(() => { const r = document.querySelector(%s).getBoundingClientRect(); return [r.left, r.right, r.width]; })()`, js(sel)))
		if r[0] < 0 || r[1] > width || r[2] == 0 {
			t.Fatalf("%s is at %v, outside the %d px viewport", sel, r, width)
		}
	}
	fits("workspaces")
	s.click("#workspaces a")
	s.click("#databases a")
	s.click(`#branches tr[data-branch="main"] a`)
	s.click(`#tables tr[data-table="people"] a`)
	s.waitText("#page-status", "Records 1–20 of 45")
	fits("grid")
	within(".grid-box")
	within("#filter")
	within("#page-next")
	within("#branch-switch")
	if !evalJS[bool](s, `(() => { const b = document.querySelector('.grid-box'); return b.scrollWidth > b.clientWidth; })()`) {
		t.Fatalf("the grid does not scroll in its box")
	}
	s.screenshot("narrow-grid")
	s.click("#page-next")
	s.waitText("#page-status", "Records 21–40 of 45")
	s.fill("#filter", `{"active": false}`)
	s.click("#apply-filter")
	s.waitText("#page-status", "of 15")
	s.click(`#grid tbody tr[data-id] td[data-col="id"]`)
	s.waitFor("#record-form")
	fits("record")
	within("#field-name")
	within("#save-record")
	s.screenshot("narrow-record")
	s.open(s.tablePath("main") + "/summary?by=team")
	s.waitFor("#bar-chart")
	fits("summary")
	within("#bar-chart")
	s.open(s.tablePath("main") + "/summary?by=born")
	s.waitFor("#time-chart")
	fits("time series")
	within("#time-chart")
	s.open("/console/w/" + s.ws + "/settings")
	s.waitFor("#members")
	fits("settings")
	s.open("/console/w/" + s.ws + "/d/app")
	s.waitFor("#branches")
	fits("branches")
}
