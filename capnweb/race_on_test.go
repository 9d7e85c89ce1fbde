//go:build race

package capnweb_test

// raceEnabled reports whether the tests run under the race detector, which changes how many
// allocations a call makes.
const raceEnabled = true
