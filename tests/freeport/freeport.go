// Package freeport hands tests loopback TCP ports to give to servers that must be told their
// address in advance (cluster routes name each other's ports before any node runs).
//
// A port the kernel picks for "127.0.0.1:0" comes from the ephemeral range, the same range
// every outgoing connection's local port comes from: once the probe closes it, a connection
// made by any test on the machine may take it before the server binds it. The ports here come
// from below that range, where only listeners that ask for them by number go.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// low and high bound the ports handed out: registered ports below Linux's default ephemeral
// range (32768-60999), above the ones well-known services use.
const low, high = 20000, 32000

// Take returns n distinct loopback ports that nothing listened on a moment ago.
func Take(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	seen := map[int]bool{}
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			t.Fatalf("no free loopback port between %d and %d after %d tries", low, high, tries)
		}
		p := low + rand.IntN(high-low)
		if seen[p] {
			continue
		}
		seen[p] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		ports = append(ports, p)
	}
	return ports
}
