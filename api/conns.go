package api

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// connLimiter is the listener the server accepts on. It keeps the number
// of open connections, in all and per client address, within their
// limits, refusing the excess with a 503; it rides out a shortage of file
// descriptors by pausing accepts while the open connections are served;
// and it knows every open connection, so that Shutdown can close those
// that serve no request.
type connLimiter struct {
	net.Listener
	log          *slog.Logger
	max, perAddr int

	mu     sync.Mutex
	open   map[*trackedConn]struct{}
	byAddr map[netip.Addr]int

	closing   chan struct{} // closed by Close: stops a paused Accept
	closeOnce sync.Once
	lastWarn  time.Time // of the last descriptor shortage logged; Accept's goroutine only
	// refused, if set before Serve, is called for every connection
	// refused (metrics).
	refused func()
}

// newConnLimiter wraps ln. perAddr 0 means no limit per address.
func newConnLimiter(ln net.Listener, max, perAddr int, log *slog.Logger) *connLimiter {
	return &connLimiter{
		Listener: ln, log: log, max: max, perAddr: perAddr,
		open: map[*trackedConn]struct{}{}, byAddr: map[netip.Addr]int{}, closing: make(chan struct{}),
	}
}

// Accept waits for a connection within the limits. Refused connections
// are answered and closed here; errors from running out of descriptors
// (or kernel memory) pause accepting, up to a second at a time, and never
// reach the caller, which would stop serving.
func (l *connLimiter) Accept() (net.Conn, error) {
	pause := time.Duration(0)
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !outOfDescriptors(err) {
				return nil, err
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			if now := time.Now(); now.Sub(l.lastWarn) >= 10*time.Second {
				l.lastWarn = now
				l.log.Warn("out of file descriptors: pausing accepts, serving the open connections", slog.Any("err", err),
					slog.Int("open", l.count()))
			}
			select {
			case <-time.After(pause):
			case <-l.closing:
				return nil, net.ErrClosed
			}
			continue
		}
		pause = 0
		if tc := l.admit(c); tc != nil {
			return tc, nil
		}
	}
}

// Close stops accepting.
func (l *connLimiter) Close() error {
	l.closeOnce.Do(func() { close(l.closing) })
	return l.Listener.Close()
}

// outOfDescriptors reports whether an accept error means the process or
// the system ran out of file descriptors or socket memory.
func outOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// refusal is the answer to a connection beyond a limit: written before the
// request is read, then the connection is closed.
var refusal = func() []byte {
	body := `{"message":"too many connections; retry in 1 second"}` + "\n"
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

// admit counts a new connection in, or refuses it.
func (l *connLimiter) admit(c net.Conn) *trackedConn {
	addr := clientAddr(c.RemoteAddr())
	l.mu.Lock()
	ok := len(l.open) < l.max && (l.perAddr <= 0 || !addr.IsValid() || l.byAddr[addr] < l.perAddr)
	var tc *trackedConn
	if ok {
		tc = newTrackedConn(c, l, addr)
		l.open[tc] = struct{}{}
		if addr.IsValid() {
			l.byAddr[addr]++
		}
	}
	l.mu.Unlock()
	if !ok {
		// A fresh socket's send buffer takes this at once; the deadline
		// only guards against the unexpected.
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		if l.refused != nil {
			l.refused()
		}
		_, _ = c.Write(refusal)
		_ = c.Close()
	}
	return tc
}

// count returns the number of open connections.
func (l *connLimiter) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}

// closeIdle closes the connections that serve no request: idle between
// requests, or still sending one whose handler has not started. A
// connection whose handler has started stays until its response is out.
func (l *connLimiter) closeIdle() {
	l.each(func(tc *trackedConn) bool { return !tc.busy.Load() })
}

// closeAll closes every open connection.
func (l *connLimiter) closeAll() { l.each(func(*trackedConn) bool { return true }) }

// each closes the open connections that pick selects, at once: lingering
// ones too.
func (l *connLimiter) each(pick func(*trackedConn) bool) {
	l.mu.Lock()
	var list []*trackedConn
	for tc := range l.open {
		if pick(tc) {
			list = append(list, tc)
		}
	}
	l.mu.Unlock()
	for _, tc := range list {
		_ = tc.close()
	}
}

// trackedConn is a connection the limiter counts until it is closed.
type trackedConn struct {
	net.Conn
	l    *connLimiter
	addr netip.Addr
	// raw is the socket, read and written around the scheduler
	// (sockio_linux.go); nil: through Conn.
	raw syscall.RawConn
	io  *sockIO // the state of raw's reads and writes
	// busy is set when a request's handler starts and cleared when the
	// connection is idle again, its response written.
	busy   atomic.Bool
	closed atomic.Bool
	// unread is set when the connection is answered and closed with part
	// of a request body still unread: Close lingers then (see linger).
	unread atomic.Bool
}

// lingerTime and lingerBytes bound how long, and how much of a body, a
// connection closed with a body unread goes on reading before it closes.
const (
	lingerTime  = 3 * time.Second
	lingerBytes = 64 << 20
)

// newTrackedConn returns c tracked by l under addr, read and written
// around the scheduler when it is a socket.
func newTrackedConn(c net.Conn, l *connLimiter, addr netip.Addr) *trackedConn {
	tc := &trackedConn{Conn: c, l: l, addr: addr}
	if tc.raw = socketOf(c); tc.raw != nil {
		tc.io = newSockIO(c)
	}
	return tc
}

// Read reads from the connection as net.Conn.Read does.
func (c *trackedConn) Read(p []byte) (int, error) {
	if c.raw == nil {
		return c.Conn.Read(p)
	}
	return c.rawRead(p)
}

// Write writes to the connection as net.Conn.Write does.
func (c *trackedConn) Write(p []byte) (int, error) {
	if c.raw == nil {
		return c.Conn.Write(p)
	}
	return c.rawWrite(p)
}

// markUnreadBody notes that the connection of ctx will be closed after its
// answer with part of the request body unread.
func markUnreadBody(c net.Conn) {
	if tc, ok := c.(*trackedConn); ok {
		tc.unread.Store(true)
	}
}

// Close closes the connection and counts it out, once. A connection closed
// with part of a request body unread lingers first, in the background.
func (c *trackedConn) Close() error {
	if c.unread.Swap(false) && !c.closed.Load() {
		c.busy.Store(false) // its answer is out: Shutdown may close it
		go c.linger()
		return nil
	}
	return c.close()
}

// linger half-closes the connection and reads what the client still sends,
// within lingerTime and lingerBytes, before closing it. Closing a socket
// with unread data makes the kernel reset the connection, and a reset
// discards what the client has not read yet: the answer (a 413, a 401)
// would be lost to a client still sending its body. Shutdown's closeAll
// ends a lingering connection at once.
func (c *trackedConn) linger() {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.Conn.SetReadDeadline(time.Now().Add(lingerTime))
	buf := make([]byte, 32<<10)
	for left := lingerBytes; left > 0; {
		n, err := c.Conn.Read(buf)
		left -= n
		if err != nil {
			break
		}
	}
	_ = c.close()
}

// close closes the connection and counts it out, once.
func (c *trackedConn) close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		l := c.l
		l.mu.Lock()
		delete(l.open, c)
		if c.addr.IsValid() {
			if n := l.byAddr[c.addr] - 1; n > 0 {
				l.byAddr[c.addr] = n
			} else {
				delete(l.byAddr, c.addr)
			}
		}
		l.mu.Unlock()
	}
	return err
}

// clientAddr is the address a client is counted under: its IP, or for
// IPv6 the /64 it is in (one host commonly holds a whole /64). It is the
// zero Addr for a connection that is not TCP/IP.
func clientAddr(a net.Addr) netip.Addr {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	ip := ta.AddrPort().Addr().Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return ip
}
