// Package wit models WIT types and converts values between JSON-ish Go values and their
// canonical form, which internal/capi writes to and reads from Wasmtime. It is pure Go.
//
// # JSON-ish values (what callers and host functions use)
//
//	WIT type           Go value accepted (Lower)                  Go value produced (Lift)
//	bool               bool                                      bool
//	s8 s16 s32 s64     any Go integer or float, json.Number      int8 int16 int32 int64
//	u8 u16 u32 u64     (integral and in range, else an error)    uint8 uint16 uint32 uint64
//	f32 f64            any Go number, json.Number                float32 float64
//	                   (f32: finite values beyond its range are an error; NaN and ±Inf pass)
//	char               string holding exactly one Unicode scalar  string
//	string             string (valid UTF-8)                      string
//	list<u8>           []byte, or a slice of numbers             []byte
//	list<S>, S another []any or any slice/array (a slice of      []bool, []int8 ... []uint64,
//	scalar             the list's own Go type is taken as it is)  []float32, []float64; []string
//	                                                             for list<char>
//	list<T>            []any or any slice/array                  []any
//	record             an ordered.Object or map[string]any (or   ordered.Object, every field in
//	                   any map with string keys) with the WIT    declaration order (its JSON
//	                   field names; a missing option field is    shows them in that order;
//	                   none; unknown keys are an error           Value reads one by name)
//	tuple<...>         []any (or slice) of exactly that length   []any
//	variant            {"tag": "case", "val": payload}; a case    {"tag": "case", "val": payload}
//	                   without payload may also be "case"        ("val" absent without payload)
//	enum               string (a case name)                      string
//	option<T>          nil = none, else the T value               nil or the T value
//	option<option<T>>  nil = none, {"some": inner} = some(inner)  same (see below)
//	result<T, E>       {"ok": v} or {"err": e} (nil payload when  {"ok": v} or {"err": e}
//	                   the side has no type)
//	flags              []string (or []any of strings) of set      []string in declaration order
//	                   flags, or map[string]bool
//	own<R> borrow<R>   Handle (a Converter with Resources may    Handle (same)
//	                   use other values, see runtime.Resource)
//
// Nested options: an option whose payload is itself an option cannot tell none from some(none)
// with nil alone, so for option<option<T>> (and only then) the outer some is written
// {"some": inner}: nil is none, {"some": nil} is some(none), {"some": v} is some(some(v)).
//
// Every mismatch is a *ValueError naming the path of the offending value
// ("args[0].items[3].title: want u32, got string"); out-of-range numbers, invalid UTF-8 and
// invalid chars are rejected. The conversions never panic.
//
// # Canonical values (what internal/capi uses)
//
// The canonical form is a Flat: the scalars, strings and scalar lists of one or more values in
// the order a walk of their types meets them, with no tree and no boxing. Lower appends to a
// Flat, Lift consumes from one; internal/capi reads and writes the same layout against
// Wasmtime's C values. A Flat is reused from call to call, so a conversion allocates only
// what the JSON-ish side needs (the records and strings a caller receives; lowering reads
// maps and ordered.Objects in place).
//
// At the function boundary, LowerReturn and LiftReturn unwrap a WIT `result`: they take and
// give the payload of one side and whether it is the error side.
//
// # Sizes
//
// A lifted value is sent on as JSON. Overhead, StringSize and ListSize give the encoded size of
// its parts from the canonical form, and a Budget adds them up against a limit, so that
// internal/capi refuses a value too large to send (a *SizeError) while lifting it, before
// most of it is copied into Go memory.
package wit
