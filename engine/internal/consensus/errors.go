package consensus

import (
	"errors"
	"fmt"
	"time"
)

// The errors a Host returns. Callers compare with errors.Is; an
// *UnavailableError also matches ErrUnavailable.
var (
	// ErrUnavailable means a group could not commit a proposal or confirm a
	// read within the caller's bound: it has no leader, or its leader cannot
	// reach a majority. Retrying later, on this node or another, may succeed.
	ErrUnavailable = errors.New("consensus: group unavailable")
	// ErrUnknownGroup means the group is not started on this host.
	ErrUnknownGroup = errors.New("consensus: group not started on this node")
	// ErrGroupExists means StartGroup was called for a group already running.
	ErrGroupExists = errors.New("consensus: group already started")
	// ErrClosed means the host, or the group's replica on it, has been
	// stopped.
	ErrClosed = errors.New("consensus: closed")
	// ErrTooLarge means a command exceeds what one proposal may carry.
	ErrTooLarge = errors.New("consensus: command too large")
	// ErrRejected means a membership change was refused, for example adding
	// a replica id the group removed before: a removed id never returns.
	ErrRejected = errors.New("consensus: membership change rejected")
	// ErrStopped is what a StateMachine returns from Open, SaveSnapshot or
	// RecoverFromSnapshot when it gives up because its stop channel closed.
	ErrStopped = errors.New("consensus: stopped")
)

// UnavailableError reports a proposal, read barrier or membership change that
// did not complete within its bound. The server maps it to 503 with a
// Retry-After of RetryAfter.
type UnavailableError struct {
	// Group is the group asked.
	Group uint64
	// Op names the operation: "propose", "read index" or "membership".
	Op string
	// Waited is how long the call waited before it gave up.
	Waited time.Duration
	// Maybe is true when the command had reached the log of a node that
	// believed it led the group: it may still commit and apply later. When
	// false, the command was never accepted into a log and will not apply.
	Maybe bool
	// RetryAfter suggests when to try again: about one election timeout.
	RetryAfter time.Duration
}

// Error says which operation on which group gave up after how long.
func (e *UnavailableError) Error() string {
	outcome := "not applied"
	if e.Maybe {
		outcome = "outcome unknown"
	}
	return fmt.Sprintf("consensus: group %d unavailable: %s gave up after %v (%s)",
		e.Group, e.Op, e.Waited.Round(time.Millisecond), outcome)
}

// Is makes errors.Is(err, ErrUnavailable) hold.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }
