package testnet

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeAddrOutsideEphemeralRange checks that the address can be bound
// and that its port lies below the range outgoing connections draw from.
func TestFreeAddrOutsideEphemeralRange(t *testing.T) {
	for range 20 {
		addr := FreeAddr(t)
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if port < lowest || port >= ephemeralStart() {
			t.Fatalf("port %d outside [%d, %d)", port, lowest, ephemeralStart())
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen on %s: %v", addr, err)
		}
		ln.Close()
	}
}
