//go:build !linux

package api

import (
	"net"
	"syscall"
)

// socketOf returns nil: connections are read and written through their own
// methods (see sockio_linux.go).
func socketOf(net.Conn) syscall.RawConn { return nil }

// sockIO is unused: see sockio_linux.go.
type sockIO struct{}

func newSockIO(net.Conn) *sockIO { return nil }

func (c *trackedConn) rawRead(p []byte) (int, error)  { return c.Conn.Read(p) }
func (c *trackedConn) rawWrite(p []byte) (int, error) { return c.Conn.Write(p) }
