//go:build linux

package api

import (
	"io"
	"net"
	"os"
	"sync"
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

// sockIO is the state of a raw socket's reads and writes. Its functions
// are made once a connection, so that a read or a write allocates
// nothing; each direction's mutex keeps concurrent calls apart, as the
// net package's locks do.
type sockIO struct {
	rmu, wmu       sync.Mutex
	rbuf, wbuf     []byte
	rn, wn         int
	rerrno, werrno syscall.Errno
	read, write    func(fd uintptr) bool
}

// newSockIO returns the reads and writes of a raw socket.
func newSockIO() *sockIO {
	s := &sockIO{}
	s.read, s.write = s.readFD, s.writeFD
	return s
}

// readFD reads once into rbuf; false: nothing to read yet, wait for the
// poller.
func (s *sockIO) readFD(fd uintptr) bool {
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&s.rbuf[0])), uintptr(len(s.rbuf)))
		if errno != syscall.EINTR {
			s.rn, s.rerrno = int(n), errno
			return errno != syscall.EAGAIN
		}
	}
}

// writeFD writes what is left of wbuf; false: the socket's buffer is
// full, wait for the poller.
func (s *sockIO) writeFD(fd uintptr) bool {
	for s.wn < len(s.wbuf) {
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&s.wbuf[s.wn])), uintptr(len(s.wbuf)-s.wn))
		switch errno {
		case 0:
			s.wn += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			s.werrno = errno
			return true
		}
	}
	return true
}

// rawRead reads into p as net.Conn.Read does: at least one byte, or io.EOF
// at the end of the stream, or an error (a deadline's is a net.Error whose
// Timeout is true).
func (c *trackedConn) rawRead(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s := c.io
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.rbuf, s.rn, s.rerrno = p, 0, 0
	err := c.raw.Read(s.read)
	s.rbuf = nil
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case s.rerrno != 0:
		return 0, c.opError("read", s.rerrno)
	case s.rn == 0:
		return 0, io.EOF
	}
	return s.rn, nil
}

// rawWrite writes all of p as net.Conn.Write does, waiting for room in the
// socket's buffer as often as it takes.
func (c *trackedConn) rawWrite(p []byte) (int, error) {
	s := c.io
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.wbuf, s.wn, s.werrno = p, 0, 0
	err := c.raw.Write(s.write)
	s.wbuf = nil
	switch {
	case err != nil:
		return s.wn, c.opError("write", err)
	case s.werrno != 0:
		return s.wn, c.opError("write", s.werrno)
	}
	return s.wn, nil
}

// opError wraps err as the net package wraps the errors of a connection's
// reads and writes.
func (c *trackedConn) opError(op string, err error) error {
	if errno, ok := err.(syscall.Errno); ok {
		err = os.NewSyscallError(op, errno)
	}
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
