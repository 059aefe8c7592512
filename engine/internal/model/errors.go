package model

import (
	"errors"
	"fmt"
)

// Code classifies an engine error. The HTTP layer maps each code to one status
// in a single table; the engine never speaks HTTP.
type Code int

// The closed set of error codes.
const (
	// CodeInternal is a bug or an I/O failure.
	CodeInternal Code = iota
	// CodeInvalid is bad input: a malformed value, name, filter or request.
	CodeInvalid
	// CodeNotFound names a missing workspace, database, branch, table, column or record.
	CodeNotFound
	// CodeAlreadyExists is a create of something that exists (table, database, branch, record with createOnly).
	CodeAlreadyExists
	// CodePrecondition is a failed optimistic-concurrency check (ifVersion).
	CodePrecondition
	// CodeConflict is a change that conflicts with the current state (duplicate key name, last branch).
	CodeConflict
	// CodeLocked is a resource that cannot be changed right now.
	CodeLocked
	// CodeUnauthenticated is a missing, unknown or revoked API key, or a workspace the caller cannot see.
	CodeUnauthenticated
	// CodeForbidden is an operation the caller's role does not allow.
	CodeForbidden
	// CodeUnsupported is a feature this server does not implement.
	CodeUnsupported
)

// Error is the error type of every engine operation that fails for a reason a
// caller can act on. Any other error is internal.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of err: the code of the first *Error in its chain,
// or CodeInternal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// OpError is the failure of one operation of a bulk insert or transaction.
type OpError struct {
	Index int
	Err   *Error
}

// OpErrors reports the failed operations of a bulk insert or transaction;
// nothing of the request was applied.
type OpErrors struct {
	Errors []OpError
}

func (e *OpErrors) Error() string {
	if len(e.Errors) == 0 {
		return "operations failed"
	}
	return fmt.Sprintf("operation %d: %s", e.Errors[0].Index, e.Errors[0].Err.Message)
}

func Invalidf(format string, args ...any) *Error  { return Errorf(CodeInvalid, format, args...) }
func NotFoundf(format string, args ...any) *Error { return Errorf(CodeNotFound, format, args...) }
