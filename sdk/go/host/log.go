//go:build wasip1

package host

// Level is the severity of a console line (`atelier:host/log.level`).
type Level uint32

// The levels of `atelier:host/log.level`, in WIT order.
const (
	Debug Level = iota
	Info
	Warn
	Error
)

//go:wasmimport atelier:host/log@0.1.0 write
func logWrite(level uint32, message string)

// Log appends message to the gadget's console log (`atelier:host/log.write`).
func Log(level Level, message string) { logWrite(uint32(level), message) }
