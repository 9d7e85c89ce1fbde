package kernel

import (
	"errors"
	"fmt"

	"atelier/host/auth"
	"atelier/host/gatekeeper"
	"atelier/host/quota"
	"atelier/host/runtime"
	"atelier/host/runtime/wit"
	"atelier/host/store"
	"atelier/jsruntime"
)

// Code classifies a refused call; clients read it from the error's `code` property.
type Code string

// The codes of docs/api.md.
const (
	CodeUnauthorized       Code = "UNAUTHORIZED"
	CodeForbidden          Code = "FORBIDDEN"
	CodeNotFound           Code = "NOT_FOUND"
	CodeInvalidArgument    Code = "INVALID_ARGUMENT"
	CodeConflict           Code = "CONFLICT"
	CodeFailedPrecondition Code = "FAILED_PRECONDITION"
	CodeGadgetError        Code = "GADGET_ERROR"
	CodeInternal           Code = "INTERNAL"
	// CodeMoved: in cluster mode, the workspace is run by another node now and the call did
	// not run; a routed workspace (cluster.go) retries it there by itself.
	CodeMoved Code = "MOVED"
	// CodeUnavailable: the node running the workspace stopped during the call, so its outcome
	// is unknown; open the workspace again. Also: the server is too busy checking passwords,
	// or the caller's address has no signups left; try again later.
	CodeUnavailable Code = "UNAVAILABLE"
	// CodeResourceExhausted: a quota or a size bound refused the call (the message names
	// which, its value and who can raise it, or how to ask for less); nothing it would have
	// done happened.
	CodeResourceExhausted Code = "RESOURCE_EXHAUSTED"
)

// Error is a refused call: a message for people and a Code for programs. Over Cap'n Web it
// is an Error whose `code` property is the Code.
type Error struct {
	Code Code
	Msg  string
	// Err is the cause, if any (for errors.Is/As on the Go side).
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrorProps implements capnweb.ErrorPropser.
func (e *Error) ErrorProps() map[string]any { return map[string]any{"code": string(e.Code)} }

// fail returns an *Error with a formatted message.
func fail(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// wrapErr gives err a Code (keeping an *Error's own) and a context prefix.
func wrapErr(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf(format, args...) + ": " + err.Error()
	var ke *Error
	if errors.As(err, &ke) {
		return &Error{Code: ke.Code, Msg: msg, Err: err}
	}
	return &Error{Code: codeOf(err), Msg: msg, Err: err}
}

// codeOf classifies the errors of the store and the runtime.
func codeOf(err error) Code {
	var (
		trap    *runtime.TrapError
		result  *runtime.ResultError
		valErr  *wit.ValueError
		ungrant *runtime.UngrantedImportError
		unprov  *runtime.UnprovidedImportError
		jsErr   *jsruntime.Error
		jsSyn   *jsruntime.SyntaxError
		over    *quota.ExceededError
	)
	switch {
	case errors.As(err, &over), errors.Is(err, wit.ErrTooLarge), errors.Is(err, runtime.ErrLiftBound):
		return CodeResourceExhausted
	case errors.Is(err, store.ErrNotFound), errors.Is(err, runtime.ErrNoExport):
		return CodeNotFound
	case errors.Is(err, store.ErrConflict):
		return CodeConflict
	case errors.Is(err, store.ErrTooLarge), errors.As(err, &valErr), errors.As(err, &ungrant), errors.As(err, &unprov):
		return CodeInvalidArgument
	case errors.As(err, &trap), errors.As(err, &result), errors.As(err, &jsErr), errors.As(err, &jsSyn):
		return CodeGadgetError
	case errors.Is(err, store.ErrFenced):
		return CodeFailedPrecondition
	case errors.Is(err, store.ErrOwnedElsewhere):
		return CodeMoved
	case errors.Is(err, auth.ErrBusy), errors.Is(err, gatekeeper.ErrUnavailable):
		return CodeUnavailable
	}
	return CodeInternal
}

// tooLarge gives a value refused for its encoded size (a *wit.SizeError in err: a gadget's
// result, a snippet's value, a gatekeeper's response) the code RESOURCE_EXHAUSTED and a
// message that says what to do; what names the value. Other errors pass unchanged.
func tooLarge(err error, what string) error {
	if err == nil { // before se, which errors.As moves to the heap: every call passes here
		return nil
	}
	var se *wit.SizeError
	if !errors.As(err, &se) {
		return err
	}
	return &Error{Code: CodeResourceExhausted, Err: err, Msg: fmt.Sprintf("%s is about %s encoded, over the %s message limit; return less, e.g. page through it",
		what, wit.FormatSize(se.Size), wit.FormatSize(se.Limit))}
}
