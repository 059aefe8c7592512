package main

import "testing"

// TestJudgedRatioText: a judged ratio never prints as its target when it
// is not equal to it, and prints as ratioText otherwise.
func TestJudgedRatioText(t *testing.T) {
	for _, c := range []struct {
		x, want float64
		text    string
	}{
		{12802.0 / 4270.0, 3, "2.998×"},
		{3.0004, 3, "3.0004×"},
		{1.1049, 1.1, "1.105×"},
		{1.0999, 1.1, "1.0999×"},
		{3, 3, "3.00×"},
		{2.31, 2, "2.31×"},
		{0.93, 0.9, "0.93×"},
		{3 + 1e-9, 3, "3.000000×"},
	} {
		if got := judgedRatioText(c.x, c.want); got != c.text {
			t.Errorf("judgedRatioText(%v, %v) = %q, want %q", c.x, c.want, got, c.text)
		}
	}
}
