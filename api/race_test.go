//go:build race

package api

// raceEnabled is set when the race detector is on: it allocates where
// the program does not.
const raceEnabled = true
