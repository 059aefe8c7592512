// Package testnet gives tests loopback addresses for processes and
// listeners they start later. A port the kernel hands out for ":0" and
// releases at once lies in the ephemeral range, where any outgoing
// connection on the machine (the nodes of a cluster dialling each other,
// a parallel test) may take it before the server binds it. FreeAddr picks
// below that range instead, where the kernel never assigns a port on its
// own, and checks that nobody listens there.
package testnet

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"
)

// lowest is the lowest port FreeAddr picks: above the ports well-known
// services and most development tools use.
const lowest = 20000

// FreeAddr returns a loopback address whose port is outside the kernel's
// ephemeral range and free at the time of the call.
func FreeAddr(t testing.TB) string {
	t.Helper()
	below := ephemeralStart()
	for range 200 {
		port := lowest
		if below > lowest {
			port += rand.IntN(below - lowest)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		return addr
	}
	t.Fatalf("no free loopback port in [%d, %d)", lowest, below)
	return ""
}

// ephemeralStart is the first port of the kernel's ephemeral range (Linux
// reports it; elsewhere the IANA range is assumed).
func ephemeralStart() int {
	const iana = 49152
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return iana
	}
	var lo, hi int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &lo, &hi); err != nil || lo <= lowest {
		return iana
	}
	return lo
}
