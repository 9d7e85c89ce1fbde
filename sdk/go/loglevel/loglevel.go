// Package loglevel holds the severities of a console line (`atelier:host/log.level`), shared
// by atelier/sdk/go/host (components) and atelier/sdk/go/extism/host (Extism plugins). It has
// no imports, so either SDK can use it without the other.
package loglevel

// Level is the severity of a console line.
type Level uint32

// The levels of `atelier:host/log.level`, in WIT order.
const (
	Debug Level = iota
	Info
	Warn
	Error
)

// Clamp returns l, or Error for a value above Error: a line is never dropped or refused
// because of its level.
func (l Level) Clamp() Level { return min(l, Error) }

// String returns the WIT name of the level ("warn"); a value above Error is "error".
func (l Level) String() string { return [...]string{"debug", "info", "warn", "error"}[l.Clamp()] }
