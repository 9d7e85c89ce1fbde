//go:build race

package runtime_test

// raceEnabled reports whether the tests run under the race detector, which changes how many
// allocations a call makes (TestCallAllocs skips then).
const raceEnabled = true
