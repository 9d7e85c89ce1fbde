//go:build race

package cluster

// bigEcho is the size of the large echo in TestPeerSessions. Under the race detector (several
// times slower, with the rest of the race stage running beside it) a 20 MiB echo starves the
// routers' pings on two cores; 3 MiB still spans several chunk frames, which is what the race
// detector has to watch.
const bigEcho = 3 << 20
