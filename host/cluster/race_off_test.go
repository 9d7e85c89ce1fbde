//go:build !race

package cluster

// bigEcho is the size of the large echo in TestPeerSessions: 20 MiB, twenty chunk frames.
const bigEcho = 20 << 20
