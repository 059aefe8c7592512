//go:build linux

package api

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
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
	rd, wd         deadline // of reads and of writes
}

// newSockIO returns the reads and writes of the raw socket of c.
func newSockIO(c net.Conn) *sockIO {
	s := &sockIO{}
	s.read, s.write = s.readFD, s.writeFD
	s.rd.set, s.wd.set = c.SetReadDeadline, c.SetWriteDeadline
	return s
}

// readFD reads once into rbuf; false: nothing to read yet, wait for the
// poller.
func (s *sockIO) readFD(fd uintptr) bool {
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&s.rbuf[0])), uintptr(len(s.rbuf)))
		if errno != syscall.EINTR {
			s.rn, s.rerrno = int(n), errno
			if errno == syscall.EAGAIN {
				s.rd.waits()
				return false
			}
			return true
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
			s.wd.waits()
			return false
		default:
			s.werrno = errno
			return true
		}
	}
	return true
}

// deadline is the deadline of one direction of a raw socket. The HTTP
// server moves a connection's deadlines on every request: the read
// deadline to the idle timeout and then to the header timeout, the write
// deadline to the request timeout. Handing each to the runtime's poller
// moves a timer, which costs about as much as reading the request's
// headers; yet a deadline only matters to a call that waits, and on a busy
// connection most calls find their bytes, or room for them, at once. So
// the deadline asked for is kept here, and the poller's is moved only when
// a call is about to wait and the poller's would let it wait past the one
// asked for. A poller's deadline earlier than the one asked for ends a
// call early; the call then moves it and goes on (again), so that reads
// and writes fail as they would with the poller's deadline set every time:
// once the deadline asked for has passed.
type deadline struct {
	set func(time.Time) error // the poller's deadline: the socket's own setter

	mu      sync.Mutex
	want    time.Time // asked for; zero: none
	armed   time.Time // the poller's; zero: none
	waiting bool      // a call waits for the poller, or is about to
}

// setDeadline asks for deadline t. A call that waits now is held to it at
// once, as the net package's deadlines hold a pending call.
func (d *deadline) setDeadline(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.want = t
	if d.waiting {
		return d.arm()
	}
	return nil
}

// waits notes that a call is about to wait for the poller, and gives the
// poller the deadline asked for, unless the poller's ends the wait no
// later.
func (d *deadline) waits() {
	d.mu.Lock()
	d.waiting = true
	_ = d.arm() // a socket being closed: the wait says so
	d.mu.Unlock()
}

// arm gives the poller the deadline asked for when the poller's would let
// a wait go past it. Called with mu held.
func (d *deadline) arm() error {
	if d.want.IsZero() || (!d.armed.IsZero() && !d.armed.After(d.want)) {
		return nil
	}
	d.armed = d.want
	return d.set(d.want)
}

// passed reports whether the deadline asked for has passed: a call then
// fails at once, as it would with the poller's deadline, even when it
// need not wait.
func (d *deadline) passed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.want.IsZero() && !time.Now().Before(d.want)
}

// retry reports whether a call that ended with err should go on: err is
// the poller's deadline, which was earlier than the one asked for, and
// the poller now has the one asked for. It also notes that the call no
// longer waits.
func (d *deadline) retry(err error) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waiting = false
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	if !d.want.IsZero() && !time.Now().Before(d.want) {
		return false // the deadline asked for has passed
	}
	d.armed = d.want
	return d.set(d.want) == nil
}

// SetDeadline sets the read and write deadlines, as net.Conn's does.
func (c *trackedConn) SetDeadline(t time.Time) error {
	if c.io == nil {
		return c.Conn.SetDeadline(t)
	}
	return errors.Join(c.io.rd.setDeadline(t), c.io.wd.setDeadline(t))
}

// SetReadDeadline sets the read deadline, as net.Conn's does.
func (c *trackedConn) SetReadDeadline(t time.Time) error {
	if c.io == nil {
		return c.Conn.SetReadDeadline(t)
	}
	return c.io.rd.setDeadline(t)
}

// SetWriteDeadline sets the write deadline, as net.Conn's does.
func (c *trackedConn) SetWriteDeadline(t time.Time) error {
	if c.io == nil {
		return c.Conn.SetWriteDeadline(t)
	}
	return c.io.wd.setDeadline(t)
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
	if s.rd.passed() {
		return 0, c.opError("read", os.ErrDeadlineExceeded)
	}
	s.rbuf, s.rn, s.rerrno = p, 0, 0
	err := c.raw.Read(s.read)
	for (err != nil || s.rd.waiting) && s.rd.retry(err) {
		err = c.raw.Read(s.read)
	}
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
	if s.wd.passed() {
		return 0, c.opError("write", os.ErrDeadlineExceeded)
	}
	s.wbuf, s.wn, s.werrno = p, 0, 0
	err := c.raw.Write(s.write)
	for (err != nil || s.wd.waiting) && s.wd.retry(err) {
		err = c.raw.Write(s.write)
	}
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
