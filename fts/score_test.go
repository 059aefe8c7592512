package fts

import (
	"math"
	"strings"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestIDF(t *testing.T) {
	f := func(docs, n int, want float64) {
		t.Helper()
		if got := IDF(docs, n); !near(got, want) {
			t.Errorf("IDF(%d, %d) = %v, want %v", docs, n, got, want)
		}
	}
	f(10, 1, math.Log(22.0/3)) // ln(1 + 9.5/1.5)
	f(1, 1, math.Log(4.0/3))   // in every record: small but positive
	f(0, 0, math.Ln2)
	f(3, 1, math.Log(1+2.5/1.5))
}

func TestTermBM25(t *testing.T) {
	f := func(idf float64, tf, fieldLen int, avgLen, want float64) {
		t.Helper()
		if got := TermBM25(idf, tf, fieldLen, avgLen); !near(got, want) {
			t.Errorf("TermBM25(%v, %d, %d, %v) = %v, want %v", idf, tf, fieldLen, avgLen, got, want)
		}
	}
	f(1, 1, 10, 10, 1)                  // average length: 2.2 / (1 + 1.2)
	f(1, 2, 5, 10, 1.6)                 // norm 0.625: 4.4 / (2 + 0.75)
	f(2, 3, 20, 10, 13.2/5.1)           // norm 1.75: 2·6.6 / (3 + 2.1)
	f(1, 1, 7, 0, 1)                    // no average yet: average length
	f(1, 0, 7, 3, 0)                    // absent
	f(1, 1000, 10, 10, 2.2*1000/1001.2) // saturates towards k1+1
}

func TestMatchFactor(t *testing.T) {
	f := func(dist int, completion bool, want float64) {
		t.Helper()
		if got := MatchFactor(dist, completion); !near(got, want) {
			t.Errorf("MatchFactor(%d, %v) = %v, want %v", dist, completion, got, want)
		}
	}
	f(0, false, 1)
	f(1, false, 0.5)
	f(2, false, 1.0/3)
	f(0, true, 0.5)
	f(2, true, 1.0/3)
	f(-1, false, 1)
}

func TestColumnScore(t *testing.T) {
	st := ColumnStats{Docs: 10, AvgLen: 4}
	idf1, idf5 := IDF(10, 1), IDF(10, 5)
	f := func(weight float64, hits []Hit, want float64) {
		t.Helper()
		if got := ColumnScore(st, 4, weight, hits); !near(got, want) {
			t.Errorf("ColumnScore(%v, %+v) = %v, want %v", weight, hits, got, want)
		}
	}
	f(1, nil, 0)
	f(1, []Hit{{Word: 0, TF: 1, DocFreq: 1}}, idf1)
	f(3, []Hit{{Word: 0, TF: 1, DocFreq: 1}}, 3*idf1)
	// A typo counts half.
	f(1, []Hit{{Word: 0, TF: 1, DocFreq: 1, Dist: 1}}, idf1/2)
	// Two words add up.
	f(2, []Hit{{Word: 0, TF: 1, DocFreq: 1}, {Word: 1, TF: 1, DocFreq: 5, Dist: 1}}, 2*(idf1+idf5/2))
	// Two variants of one word: the best one counts.
	f(1, []Hit{{Word: 0, TF: 1, DocFreq: 5, Dist: 1}, {Word: 0, TF: 1, DocFreq: 1}, {Word: 0, TF: 1, DocFreq: 1, Completion: true}}, idf1)
	// More words matched score higher than one matched twice.
	two := ColumnScore(st, 4, 1, []Hit{{Word: 0, TF: 1, DocFreq: 5}, {Word: 1, TF: 1, DocFreq: 5}})
	one := ColumnScore(st, 4, 1, []Hit{{Word: 0, TF: 2, DocFreq: 5}})
	if two <= one {
		t.Errorf("two words %v <= one word twice %v", two, one)
	}
}

func TestValueBoost(t *testing.T) {
	f := func(factor float64, equal, applies bool, want float64) {
		t.Helper()
		if got := ValueBoost(factor, equal, applies); got != want {
			t.Errorf("ValueBoost(%v, %v, %v) = %v, want %v", factor, equal, applies, got, want)
		}
	}
	f(2.5, true, true, 2.5)
	f(2.5, false, true, 0)
	f(2.5, true, false, 0)
	f(math.Inf(1), true, true, 0)
}

func TestNumericBoost(t *testing.T) {
	f := func(factor float64, mod string, value float64, want float64) {
		t.Helper()
		m, err := ParseModifier(mod)
		if err != nil {
			t.Fatal(err)
		}
		if got := NumericBoost(factor, m, value, true, true); !near(got, want) {
			t.Errorf("NumericBoost(%v, %s, %v) = %v, want %v", factor, mod, value, got, want)
		}
	}
	f(2, "", 3, 6)
	f(2, "none", 3, 6)
	f(10, "log", 10, 2)
	f(1, "log", 0.1, -1)
	f(9, "log1p", 11, 2)
	f(1, "ln", math.E, 1)
	f(1, "ln1p", math.E-1, 1)
	f(2, "square", 3, 36)
	f(2, "sqrt", 8, 4)
	f(2, "reciprocal", 4, 0.125)
	// Non-finite results add nothing.
	f(1, "log", 0, 0)
	f(1, "ln", -1, 0)
	f(1, "sqrt", -4, 0)
	f(0, "reciprocal", 5, 0)
	f(1, "log1p", -1, 0)
	// A null value or a booster whose filter does not match adds nothing.
	if got := NumericBoost(2, ModNone, 3, false, true); got != 0 {
		t.Errorf("null value: %v", got)
	}
	if got := NumericBoost(2, ModNone, 3, true, false); got != 0 {
		t.Errorf("not applying: %v", got)
	}
}

func TestParseModifier(t *testing.T) {
	for m := ModNone; m <= ModReciprocal; m++ {
		got, err := ParseModifier(m.String())
		if err != nil || got != m {
			t.Errorf("ParseModifier(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseModifier("log2"); err == nil || !strings.Contains(err.Error(), "log2") {
		t.Errorf("ParseModifier(log2) error = %v", err)
	}
}

func TestParseScale(t *testing.T) {
	f := func(s string, want time.Duration, wantErr bool) {
		t.Helper()
		got, err := ParseScale(s)
		if got != want || (err != nil) != wantErr {
			t.Errorf("ParseScale(%q) = %v, %v; want %v, error %v", s, got, err, want, wantErr)
		}
	}
	f("1d", 24*time.Hour, false)
	f("36h", 36*time.Hour, false)
	f("5m", 5*time.Minute, false)
	f("10s", 10*time.Second, false)
	f("250ms", 250*time.Millisecond, false)
	f("007s", 7*time.Second, false)
	f("0d", 0, true)
	f("", 0, true)
	f("d", 0, true)
	f("1", 0, true)
	f("1w", 0, true)
	f("1.5h", 0, true)
	f("-1h", 0, true)
	f(" 1h", 0, true)
	f("1H", 0, true)
	f("1hs", 0, true)
	f("99999999999999999999d", 0, true)
	f("200000d", 0, true) // beyond a Duration
}

func TestDateBoost(t *testing.T) {
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	two := 2.0
	b, err := NewDateDecay("2024-01-01T00:00:00Z", "10d", 0.5, &two, now)
	if err != nil {
		t.Fatal(err)
	}
	f := func(date string, want float64) {
		t.Helper()
		d, err := time.Parse(time.RFC3339Nano, date)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Boost(d, true, true); !near(got, want) {
			t.Errorf("Boost(%s) = %v, want %v", date, got, want)
		}
	}
	f("2024-01-01T00:00:00Z", 2)                // at the origin: factor
	f("2024-01-11T00:00:00Z", 1)                // one scale: factor · decay
	f("2023-12-22T00:00:00Z", 1)                // before the origin too
	f("2024-01-31T00:00:00Z", 0.25)             // three scales: 2 · 0.5³
	f("2024-01-06T00:00:00Z", 2*math.Sqrt(0.5)) // half a scale
	f("2024-01-01T01:00:00+01:00", 2)           // same instant, other zone
	f("9999-12-31T23:59:59.999999999Z", 0)      // far away: underflows to 0
	if got := b.Boost(now, false, true); got != 0 {
		t.Errorf("no date: %v", got)
	}
	if got := b.Boost(now, true, false); got != 0 {
		t.Errorf("not applying: %v", got)
	}

	// Origin defaults to now, factor to 1.
	d, err := NewDateDecay("", "1h", 0.25, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Boost(now.Add(-2*time.Hour), true, true); !near(got, 0.0625) {
		t.Errorf("default origin and factor: %v, want 0.0625", got)
	}

	bad := func(origin, scale string, decay float64, factor *float64) {
		t.Helper()
		if _, err := NewDateDecay(origin, scale, decay, factor, now); err == nil {
			t.Errorf("NewDateDecay(%q, %q, %v, %v) accepted", origin, scale, decay, factor)
		}
	}
	neg, inf := -1.0, math.Inf(1)
	bad("yesterday", "1d", 0.5, nil)
	bad("2024-01-01", "1d", 0.5, nil) // a date without a time is not RFC 3339
	bad("", "1y", 0.5, nil)
	bad("", "1d", 1.5, nil)
	bad("", "1d", -0.1, nil)
	bad("", "1d", math.NaN(), nil)
	bad("", "1d", 0.5, &neg)
	bad("", "1d", 0.5, &inf)
}
