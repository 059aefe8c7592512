//go:build linux

package api

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// A served connection reads its requests and writes its answers with raw
// system calls on its non-blocking socket, waiting through the runtime's
// poller as the net package does, but without telling the scheduler that
// a system call is under way. Those calls never block, and the scheduler
// notice costs more than the call: when the process was idle, the runtime's
// monitor thread sleeps deeply, and the first system call of the next
// request wakes it and sets it polling every 20 µs again. A server that
// answers one request at a time paid tens of microseconds of CPU a request
// in the monitor's wake-ups and context switches, more than reading and
// writing the request itself. Work that may block (files, the disk) still
// goes through the scheduler.

// socketOf returns the raw socket of c, a TCP or Unix connection, or nil:
// others are read and written through their own methods.
func socketOf(c net.Conn) syscall.RawConn {
	var raw syscall.RawConn
	var err error
	switch c := c.(type) {
	case *net.TCPConn:
		raw, err = c.SyscallConn()
	case *net.UnixConn:
		raw, err = c.SyscallConn()
	}
	if err != nil {
		return nil
	}
	return raw
}

// rawRead reads into p as net.Conn.Read does: at least one byte, or io.EOF
// at the end of the stream, or an error (a deadline's is a net.Error whose
// Timeout is true).
func (c *trackedConn) rawRead(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno syscall.Errno
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			n, _, errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if errno != syscall.EINTR {
				// EAGAIN: nothing to read yet, wait for the poller.
				return errno != syscall.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}

// rawWrite writes all of p as net.Conn.Write does, waiting for room in the
// socket's buffer as often as it takes.
func (c *trackedConn) rawWrite(p []byte) (int, error) {
	written := 0
	var errno syscall.Errno
	err := c.raw.Write(func(fd uintptr) bool {
		for written < len(p) {
			n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[written])), uintptr(len(p)-written))
			switch e {
			case 0:
				written += int(n)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // the buffer is full: wait for the poller
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return written, c.opError("write", err)
	case errno != 0:
		return written, c.opError("write", errno)
	}
	return written, nil
}

// opError wraps err as the net package wraps the errors of a connection's
// reads and writes.
func (c *trackedConn) opError(op string, err error) error {
	if errno, ok := err.(syscall.Errno); ok {
		err = os.NewSyscallError(op, errno)
	}
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
