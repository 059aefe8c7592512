package index

import "fmt"

// InputError is a request the package rejects: bad JSON, an unknown
// column, operator or function, a value of the wrong type, a garbled
// cursor, a limit exceeded. Message says what is wrong and names the
// offending part; the API answers it with 400. Every parser and entry
// point of the package reports bad input as an *InputError, so callers
// unwrap one type.
type InputError struct {
	Message string
}

// Error returns the message.
func (e *InputError) Error() string { return e.Message }

// inputErrorf makes an *InputError.
func inputErrorf(format string, args ...any) error {
	return &InputError{Message: fmt.Sprintf(format, args...)}
}
