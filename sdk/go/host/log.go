//go:build wasip1

package host

import "atelier/sdk/go/loglevel"

// Level is the severity of a console line (`atelier:host/log.level`).
type Level = loglevel.Level

// The levels of `atelier:host/log.level`, in WIT order.
const (
	Debug = loglevel.Debug
	Info  = loglevel.Info
	Warn  = loglevel.Warn
	Error = loglevel.Error
)

//go:wasmimport atelier:host/log@0.1.0 write
func logWrite(level uint32, message string)

// Log appends message to the gadget's console log (`atelier:host/log.write`); a level above
// Error is logged as Error.
func Log(level Level, message string) { logWrite(uint32(level.Clamp()), message) }
