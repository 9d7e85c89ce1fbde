package wit

// Signature renders a function's `(a: T, b: U) -> R` for the external tests.
var Signature = signature
