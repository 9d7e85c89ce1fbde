package capnweb

import (
	"errors"
	"fmt"
	"strings"
)

// UndefinedType is the type of Undefined.
type UndefinedType struct{}

// Undefined is JavaScript's undefined. It is sent as ["undefined"], decoded from it, and is what a
// method without a result value returns.
var Undefined = UndefinedType{}

// TypedArray is a byte container other than Uint8Array (ArrayBuffer, Int16Array, Float64Array,
// ...). Data holds the raw little-endian bytes. A plain []byte is a Uint8Array.
type TypedArray struct {
	// Type is the JavaScript class name, e.g. "ArrayBuffer" or "Int16Array".
	Type string
	// Data holds the element bytes; its length is a multiple of the element size.
	Data []byte
}

// typedArraySizes maps the byte-container class names of the protocol to their element size.
var typedArraySizes = map[string]int{
	"ArrayBuffer": 1, "DataView": 1, "Int8Array": 1, "Uint8Array": 1, "Uint8ClampedArray": 1,
	"Int16Array": 2, "Uint16Array": 2, "Int32Array": 4, "Uint32Array": 4, "Float32Array": 4,
	"BigInt64Array": 8, "BigUint64Array": 8, "Float64Array": 8,
}

// Error is an error value on the wire: ["error", name, message, stack?, props?].
//
// Remote rejections arrive as *Error. A handler may return an *Error (or any error that
// implements ErrorName) to choose the JavaScript error class the caller sees, e.g. "TypeError" or
// "RangeError". Names outside JavaScript's built-in error classes reach a JS caller as "Error".
type Error struct {
	// Name is the error class name, e.g. "Error", "TypeError", "MyError".
	Name string
	// Message is the error message.
	Message string
	// Stack is the remote stack trace, if the sender chose to include one.
	Stack string
	// Props holds extra properties (e.g. {"code": 42}); values are protocol values.
	Props map[string]any
}

// Error formats the error as "Name: Message", like JavaScript's Error.prototype.toString.
func (e *Error) Error() string {
	if e.Name == "" {
		return e.Message
	}
	return e.Name + ": " + e.Message
}

// NewError returns an *Error with the given class name and formatted message.
func NewError(name, format string, args ...any) *Error {
	return &Error{Name: name, Message: fmt.Sprintf(format, args...)}
}

// TypeError returns an *Error named "TypeError".
func TypeError(format string, args ...any) *Error { return NewError("TypeError", format, args...) }

// RangeError returns an *Error named "RangeError".
func RangeError(format string, args ...any) *Error { return NewError("RangeError", format, args...) }

// ErrorNamer lets an error type choose the JavaScript error class name sent for it.
type ErrorNamer interface {
	ErrorName() string
}

// ErrorPropser lets an error type attach extra properties (the 5th element of an error value).
type ErrorPropser interface {
	ErrorProps() map[string]any
}

// toWireError converts any Go error to the *Error sent on the wire.
func toWireError(err error) *Error {
	var we *Error
	if errors.As(err, &we) {
		return we
	}
	out := &Error{Name: "Error", Message: err.Error()}
	var namer ErrorNamer
	if errors.As(err, &namer) {
		out.Name = namer.ErrorName()
	}
	var propser ErrorPropser
	if errors.As(err, &propser) {
		out.Props = propser.ErrorProps()
	}
	return out
}

// protocolError is a violation of the wire protocol by the peer; it aborts the session.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "bad RPC message: " + e.msg }

func badMessage(format string, args ...any) error {
	return &protocolError{msg: fmt.Sprintf(format, args...)}
}

// blockedMember reports whether a JavaScript receiver ignores an object member or property of
// this name (Object.prototype members and toJSON).
func blockedMember(name string) bool {
	switch name {
	case "__proto__", "constructor", "toString", "toLocaleString", "valueOf", "hasOwnProperty",
		"isPrototypeOf", "propertyIsEnumerable", "__defineGetter__", "__defineSetter__",
		"__lookupGetter__", "__lookupSetter__", "toJSON":
		return true
	}
	return false
}

// pathString joins a property path like JavaScript error messages do ("a.b.c").
func pathString(path []any) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}
