// Package proccpu reads the CPU time the process has used, for the
// benchmarks that report CPU per operation: on a shared machine a
// benchmark's CPU time counts its own work, where wall time counts the
// waits for a core too.
package proccpu
