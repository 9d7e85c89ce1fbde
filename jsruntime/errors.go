package jsruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

var (
	// ErrStopped: the engine was stopped by a limit (deadline, memory cap) or trapped. The
	// error wraps the runtime's *runtime.TrapError, so errors.Is also matches its kind
	// (runtime.ErrDeadline, runtime.ErrMemory, runtime.ErrTrap).
	ErrStopped = errors.New("script stopped")
	// ErrRevoked: a capability was used after the executeCode call it was handed to ended.
	ErrRevoked = errors.New("capability revoked")
)

// Error is a value JavaScript threw, or the reason of a promise it rejected: Name and Message
// as the error had them (Name is empty when a non-Error value was thrown), and Stack with
// positions as file:line:column of the source as it was written (TypeScript included).
type Error struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Stack   string `json:"stack"`
}

// Error renders "Name: Message (at file:line:column)" with the innermost position.
func (e *Error) Error() string {
	s := e.Message
	if e.Name != "" {
		s = e.Name + ": " + s
	}
	if at := position.FindString(e.Stack); at != "" {
		s += " (at " + at + ")"
	}
	return s
}

// failure turns the error of an engine call into what the caller sees: a *Error for what
// JavaScript threw (positions mapped back through maps), ErrStopped for a stopped engine.
func failure(err error, maps map[string]*sourceMap, lim Limits) error {
	var re *runtime.ResultError
	if errors.As(err, &re) {
		text, _ := re.Value.(string)
		var je Error
		if jerr := json.Unmarshal([]byte(text), &je); jerr != nil {
			return fmt.Errorf("the engine returned a malformed error %q: %w", text, jerr)
		}
		je.Message = sourceText(je.Message, maps)
		je.Stack = sourceText(je.Stack, maps)
		return &je
	}
	var te *runtime.TrapError
	if !errors.As(err, &te) {
		return err
	}
	switch {
	case errors.Is(te, runtime.ErrDeadline):
		return fmt.Errorf("%w: it ran past its deadline of %v: %w", ErrStopped, lim.Timeout, err)
	case errors.Is(te, runtime.ErrMemory):
		return fmt.Errorf("%w: it exceeded its memory budget of %d bytes: %w", ErrStopped, lim.maxMemory(), err)
	}
	// Refused by the runtime's bound of the result as a string (see Limits.runtime), whose
	// size is the JSON text's with its quotes escaped: about the text's. The limit is the
	// script's. The instance was retired as after a trap, which the error keeps saying.
	if se := (*wit.SizeError)(nil); errors.As(te, &se) {
		return fmt.Errorf("%w (%w)", &wit.SizeError{Size: se.Size, Limit: lim.MaxResult}, err)
	}
	return fmt.Errorf("%w: the engine trapped: %w", ErrStopped, err)
}

// sourceText rewrites text from the engine (an error's message or stack, a console line) for
// the user: the stack frames of the engine's own glue code are dropped, and positions in
// stripped TypeScript are mapped back to the source.
func sourceText(text string, maps map[string]*sourceMap) string {
	if !strings.Contains(text, "<engine>") {
		return mapPositions(text, maps)
	}
	lines := strings.SplitAfter(text, "\n")
	out := lines[:0]
	for _, l := range lines {
		if !strings.Contains(l, "<engine>") {
			out = append(out, l)
		}
	}
	return mapPositions(strings.Join(out, ""), maps)
}
