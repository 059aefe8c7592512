//go:build unix

package api

import (
	"errors"
	"syscall"
)

// peerClosed reports whether the other end of a socket has closed it: a
// peek that neither waits nor takes a byte finds the end of the stream or
// a reset. Bytes waiting to be read mean the client is still there. The
// peek goes around the runtime's poller, whose read deadline may have
// passed while the request runs.
func peerClosed(raw syscall.RawConn) bool {
	closed := false
	err := raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil:
			closed = n == 0
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EINTR):
		default:
			closed = true // reset, or the socket is gone
		}
	})
	return closed || err != nil
}
