package api

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection, the server's
// tracked as the limiter tracks it.
func tcpPair(t *testing.T) (*trackedConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	tc := newTrackedConn(server, nil, netip.Addr{})
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	if runtime.GOOS == "linux" && tc.raw == nil {
		t.Fatal("a TCP connection is not read around the scheduler")
	}
	return tc, client
}

// A served connection reads and writes as net.Conn does: it waits for
// bytes and for room in the socket's buffer, writes all it is given, ends
// with io.EOF, and fails a read past its deadline with a timeout.
func TestTrackedConnIO(t *testing.T) {
	t.Run("read waits, then EOF", func(t *testing.T) {
		tc, client := tcpPair(t)
		go func() {
			time.Sleep(20 * time.Millisecond)
			client.Write([]byte("hello"))
			time.Sleep(20 * time.Millisecond)
			client.Close()
		}()
		got, err := io.ReadAll(tc)
		if err != nil || string(got) != "hello" {
			t.Fatalf("read %q, %v; want hello and the end", got, err)
		}
		if n, err := tc.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Fatalf("read after the end: %d, %v; want 0, io.EOF", n, err)
		}
	})
	t.Run("write waits for room", func(t *testing.T) {
		tc, client := tcpPair(t)
		// Far more than the socket buffers hold, read slowly.
		want := bytes.Repeat([]byte("0123456789abcdef"), 1<<18)
		got := make(chan []byte)
		go func() {
			time.Sleep(50 * time.Millisecond)
			b, _ := io.ReadAll(client)
			got <- b
		}()
		n, err := tc.Write(want)
		if err != nil || n != len(want) {
			t.Fatalf("wrote %d of %d: %v", n, len(want), err)
		}
		tc.Conn.Close()
		if b := <-got; !bytes.Equal(b, want) {
			t.Fatalf("the reader got %d bytes, not the %d written", len(b), len(want))
		}
	})
	t.Run("deadline", func(t *testing.T) {
		tc, _ := tcpPair(t)
		tc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, err := tc.Read(make([]byte, 8))
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read past the deadline: %v; want a timeout", err)
		}
	})
	t.Run("write to a closed peer", func(t *testing.T) {
		tc, client := tcpPair(t)
		client.(*net.TCPConn).SetLinger(0) // close with a reset
		client.Close()
		time.Sleep(20 * time.Millisecond)
		var err error
		for range 10 {
			if _, err = tc.Write(make([]byte, 64<<10)); err != nil {
				break
			}
		}
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "write" {
			t.Fatalf("write to a reset connection: %v; want a write error", err)
		}
	})
}

// A served connection's deadlines hold as net.Conn's do, however often
// they move: a later deadline replaces an earlier one a read already
// waited under, a deadline set during a wait ends it, a deadline that
// passed fails a read that has bytes to read, no deadline means none, and
// a write that waits for room fails at its deadline.
func TestTrackedConnDeadlines(t *testing.T) {
	timeout := func(t *testing.T, what string, err error) {
		t.Helper()
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: %v; want a timeout", what, err)
		}
	}
	// readAfter reads from tc what client writes after d.
	readAfter := func(t *testing.T, tc *trackedConn, client net.Conn, d time.Duration) error {
		t.Helper()
		go func() {
			time.Sleep(d)
			client.Write([]byte("x"))
		}()
		_, err := tc.Read(make([]byte, 8))
		return err
	}
	t.Run("moved later", func(t *testing.T) {
		tc, client := tcpPair(t)
		tc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if err := readAfter(t, tc, client, 10*time.Millisecond); err != nil {
			t.Fatalf("read within the deadline: %v", err)
		}
		// Past the first deadline, within the second.
		for range 3 {
			tc.SetReadDeadline(time.Now().Add(time.Second))
			if err := readAfter(t, tc, client, 100*time.Millisecond); err != nil {
				t.Fatalf("read within a deadline moved later: %v", err)
			}
		}
		tc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := tc.Read(make([]byte, 8))
		timeout(t, "read past the deadline moved back", err)
	})
	t.Run("set during a wait", func(t *testing.T) {
		tc, _ := tcpPair(t)
		tc.SetReadDeadline(time.Now().Add(time.Minute))
		go func() {
			time.Sleep(30 * time.Millisecond)
			tc.SetReadDeadline(time.Now())
		}()
		t0 := time.Now()
		_, err := tc.Read(make([]byte, 8))
		timeout(t, "read cut by a deadline set while it waits", err)
		if d := time.Since(t0); d > 10*time.Second {
			t.Fatalf("the read waited %v", d)
		}
	})
	t.Run("passed with bytes to read", func(t *testing.T) {
		tc, client := tcpPair(t)
		tc.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		client.Write([]byte("x"))
		time.Sleep(30 * time.Millisecond)
		_, err := tc.Read(make([]byte, 8))
		timeout(t, "read past the deadline with bytes waiting", err)
	})
	t.Run("cleared", func(t *testing.T) {
		tc, client := tcpPair(t)
		tc.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
		if err := readAfter(t, tc, client, 5*time.Millisecond); err != nil {
			t.Fatalf("read within the deadline: %v", err)
		}
		tc.SetReadDeadline(time.Time{})
		if err := readAfter(t, tc, client, 100*time.Millisecond); err != nil {
			t.Fatalf("read without a deadline: %v", err)
		}
	})
	t.Run("write", func(t *testing.T) {
		tc, _ := tcpPair(t)
		tc.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		big := make([]byte, 1<<20)
		var err error
		for range 64 { // the peer reads nothing: the buffers fill up
			if _, err = tc.Write(big); err != nil {
				break
			}
		}
		timeout(t, "write past the deadline", err)
	})
}

// Reading and writing a served connection allocates nothing.
func TestTrackedConnAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	tc, client := tcpPair(t)
	out, in := make([]byte, 512), make([]byte, 512)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := tc.Write(out); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(client, in); err != nil {
			t.Fatal(err)
		}
		if _, err := client.Write(out); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(tc, in); err != nil {
			t.Fatal(err)
		}
	}); n > 0 {
		t.Errorf("%v allocations a round trip, want none", n)
	}
}
