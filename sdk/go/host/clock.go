//go:build wasip1

package host

//go:wasmimport atelier:host/clock@0.1.0 now-ms
func clockNowMs() uint64

// NowMs returns the host's wall-clock time in milliseconds since the Unix epoch
// (`atelier:host/clock.now-ms`).
func NowMs() uint64 { return clockNowMs() }
