package console_test

import (
	"fmt"
	"time"
)

// The people fixture: teams, and people who link to them, with a value of
// every kind the grid renders differently.
var teams = []string{"core", "web", "data", "ops", "design"}

// teamOf spreads people over the teams unevenly (5, 4, 3, 2 and 1 of
// every 15), so that a chart of them has bars of different lengths.
var teamOf = []int{0, 1, 2, 0, 1, 3, 0, 2, 4, 1, 0, 3, 2, 1, 0}

// person is one row of the fixture, i from 1.
type person struct {
	id, name, email, team, bio string
	age                        int
	score                      float64
	active                     bool
	born                       time.Time
}

// people is the number of records in the people table.
const people = 45

// personAt returns the fixture's i-th person; every value follows from i.
func personAt(i int) person {
	bios := []string{"likes hiking and maps", "collects old radios", "bakes sourdough bread", "plays chess online", "writes poetry at night"}
	return person{
		id:     fmt.Sprintf("p%02d", i),
		name:   fmt.Sprintf("Person %02d", i),
		email:  fmt.Sprintf("p%02d@example.com", i),
		team:   teams[teamOf[i%len(teamOf)]],
		bio:    bios[i%len(bios)],
		age:    20 + (i*7)%40,
		score:  float64(i) / 2,
		active: i%3 != 0,
		born:   time.Date(2024, time.Month(1+i%6), 1+i%27, 10, 0, 0, 0, time.UTC),
	}
}

// seedPeople creates database app with tables teams and people on main,
// and the fixture's records; p01 carries a file.
func (s *session) seedPeople() {
	s.t.Helper()
	s.must(201, "PUT", "/workspaces/"+s.ws+"/dbs/app", map[string]any{"region": "local"})
	base := s.data("app", "main")
	s.must(201, "PUT", base+"/tables/teams", nil)
	s.must(200, "PUT", base+"/tables/teams/schema", map[string]any{"columns": []any{
		map[string]any{"name": "name", "type": "string"},
	}})
	var recs []any
	for _, t := range teams {
		recs = append(recs, map[string]any{"id": t, "name": "Team " + t})
	}
	s.must(200, "POST", base+"/tables/teams/bulk", map[string]any{"records": recs})
	s.must(201, "PUT", base+"/tables/people", nil)
	s.must(200, "PUT", base+"/tables/people/schema", map[string]any{"columns": []any{
		map[string]any{"name": "name", "type": "string"},
		map[string]any{"name": "email", "type": "email", "unique": true},
		map[string]any{"name": "age", "type": "int"},
		map[string]any{"name": "score", "type": "float"},
		map[string]any{"name": "active", "type": "bool"},
		map[string]any{"name": "born", "type": "datetime"},
		map[string]any{"name": "team", "type": "link", "link": map[string]any{"table": "teams"}},
		map[string]any{"name": "tags", "type": "multiple"},
		map[string]any{"name": "notes", "type": "json"},
		map[string]any{"name": "bio", "type": "text"},
		map[string]any{"name": "photo", "type": "file"},
	}})
	recs = recs[:0]
	for i := 1; i <= people; i++ {
		p := personAt(i)
		recs = append(recs, map[string]any{
			"id": p.id, "name": p.name, "email": p.email, "age": p.age, "score": p.score,
			"active": p.active, "born": p.born.Format(time.RFC3339), "team": p.team,
			"tags": []string{fmt.Sprintf("t%d", i%4)}, "notes": fmt.Sprintf(`{"n":%d,"even":%t}`, i, i%2 == 0),
			"bio": p.bio,
		})
	}
	s.must(200, "POST", base+"/tables/people/bulk", map[string]any{"records": recs})
	s.must(200, "PATCH", base+"/tables/people/data/p01", map[string]any{
		"photo": map[string]any{"name": "hello.txt", "mediaType": "text/plain", "base64Content": "aGVsbG8gY29uc29sZQ=="},
	})
}

// tablePath is the console URL of the people grid on a branch.
func (s *session) tablePath(branch string) string {
	return "/console/w/" + s.ws + "/d/app/b/" + branch + "/t/people"
}
