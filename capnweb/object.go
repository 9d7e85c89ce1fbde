package capnweb

import "atelier/capnweb/ordered"

// Object is a JavaScript object whose keys keep their order: objects received from the peer
// are decoded into it, with the keys in the order the sender wrote them, and it is written
// back in that order, so a value passed through (an echo, a map() result built as {id, hi}, a
// value held and returned) reaches the other side as JavaScript would show it. Keys are
// unique; a message naming a key twice keeps its first position and its last value, like
// JavaScript's JSON.parse.
//
// A handler parameter or a Promise.AwaitAs result of type any (or Object) receives objects as
// Object; Promise.Await, and parameters of map, struct or slice types (whose elements of type
// any are plain too), get map[string]any, maps or structs as before. A map[string]any sent by Go code is written with sorted keys, since Go
// maps have no order: build an Object to choose the order. It is the same type as
// ordered.Object (see that package for its methods), which the runtime lifts WIT records into.
type Object = ordered.Object

// Field is one key and value of an Object (ordered.Field).
type Field = ordered.Field

// objectIndexMin is the number of keys from which the JSON parser finds repeated keys with a
// map instead of a scan of the keys already read.
const objectIndexMin = 16
