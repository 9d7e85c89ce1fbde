// Package capnweb implements the Cap'n Web RPC protocol (capnweb/PROTOCOL.md in the shared
// notes; the official peer is npm capnweb 0.12.0) for both servers and clients: sessions over
// WebSocket, HTTP batch, in-process pipes (Pipe) or any Transport, promise pipelining, stubs
// passed both ways with reference counting, .map() (remap), readable streams and every plain
// value type.
//
// # Serving
//
//	srv := &capnweb.Server{NewMain: func(r *http.Request) (any, error) { return &API{}, nil }}
//	http.HandleFunc("/ws", srv.ServeWebSocket)   // capnwebgin adapts both for gin
//	http.HandleFunc("/batch", srv.ServeBatch)
//
// Server.Shutdown drains the WebSocket sessions (calls in progress finish and reply, new ones
// are refused, then each session closes); call it next to http.Server.Shutdown, which does not
// wait for them. CheckOrigin is same-origin by default; authenticate in-band (a method returning an
// authenticated object), never with cookies, when allowing other origins.
//
// # Targets
//
// A target is a Go value passed by reference: a pointer to a struct that embeds Target, a
// DynamicTarget (methods decided at run time), or a func. Exported methods are RPC methods under
// their JavaScript name ("MakeCounter" is "makeCounter", "ID" is "id"; Dispose, and methods
// promoted from embedded fields that are not targets, are never callable). A method may take a context.Context first; the context carries the session
// (SessionFrom(ctx), with Peer() describing the caller) and is cancelled when the caller drops
// the result early or the session ends. Parameters are converted from protocol values (numbers
// to int/float kinds with range checks, objects to structs by json tag or JavaScript name,
// arrays to slices, stubs to *Stub, ...); missing arguments are zero values, extra ones are
// ignored, a variadic last parameter takes the rest. Results may be (), (T), (error) or
// (T, error). A returned error rejects the call: its JavaScript class is "Error" unless the error
// is an *Error or implements ErrorNamer, and ErrorPropser adds properties. A panic rejects with
// "internal error" and is logged.
//
// Properties: reading a property runs a method without parameters that returns a value (so
// "Version() string" serves `await api.version`); reading any other method gives a function
// stub. Struct fields of targets are not visible. Targets that implement Disposer are told when
// the session no longer references them.
//
// Ordering: calls on one target start in arrival order and run one at a time, until the
// handler returns, awaits a promise (Promise.Await) or calls Unblock. Handlers run on pooled
// goroutines, not on the session's read loop, so a handler may call back into the peer; only the
// calls of a target that implements Inline (methods that never wait) run on the read loop of a
// server's WebSocket session, and hand the reading to a new goroutine if they await after all.
//
// # Calling
//
//	s, _ := capnweb.DialWebSocket(ctx, "ws://host/ws", capnweb.Options{})
//	api := s.Main()
//	c := api.Call(ctx, "makeCounter", 10)          // sent at once
//	n, err := c.Call(ctx, "increment", 5).Await(ctx) // pipelined: one round trip
//	c.Dispose()
//
// Call, Get and Map never block. Promises can be passed as arguments (the peer substitutes the
// value), Promise.Map records a function over the value, and AwaitAll requests several results
// in one round trip. Over HTTP batch (NewHTTPBatchSession) the request leaves on the first
// Await and every call is pulled. Await returns protocol values:
// nil, Undefined, bool, float64, string, *big.Int, time.Time (the zero Time is an invalid
// Date), []byte, TypedArray, *Error, *url.URL, http.Header, []any, map[string]any, *Stub,
// *ReadableStream and *WritableStream; AwaitAs converts to a Go type. Sending accepts the same plus Go numbers,
// slices, maps, structs and targets. Integers beyond 2^53 travel as bigint.
//
// Key order: objects keep the order of their keys end to end, as in JavaScript. Objects
// received are decoded into Object (ordered; a key repeated in a message keeps its first
// position and its last value, like JSON.parse) and written back in that order, so echo, a
// map() result built as {id, hi} and values held and returned look to the peer as they were
// sent. A handler parameter of type any, and AwaitAs[any] or AwaitAs[Object], see Object;
// Await, and parameters of map, struct or slice types, see map[string]any. Structs are
// written in field order, an Object in its order, a map[string]any with sorted keys (Go maps
// have no order).
//
// # References
//
// Every *Stub and *Promise holds one reference: Dispose it when done (a stub's last Dispose
// releases the remote object; a promise's cancels a call nobody awaited). Stubs received as
// call arguments are disposed when the handler returns: Dup them to keep them. Stubs inside an
// awaited value belong to the promise. Each time a capability is sent it gets a fresh export
// id, as the JavaScript peer expects; received introductions are counted and released together.
//
// # Limits and errors
//
// Limits bounds message size, nesting, bigint length, table sizes and calls in progress per
// session. A malformed message, an unknown id, a release of more references than held, or a
// limit overrun aborts the session with ["abort", Error "bad RPC message: ..."]; application
// errors only reject the call. Blob, Request and Response values are refused with such an
// abort. The session also bounds what it holds for the peer: answers the peer does not read
// wait up to MaxQueuedBytes (32 MiB) and the write deadline (10 s) before the session ends,
// while it keeps reading meanwhile, so a stalled peer never stops its own messages. A Server
// also bounds, across its sessions, the batch bodies (Server.BatchMemory) and the large
// incoming WebSocket messages (Server.MessageMemory) it holds at once, and the part of each
// that one client network holds (a quarter by default; see ClientNetwork).
//
// # Streams
//
// A *ReadableStream (NewReadableStream, StreamOf, or received) travels through a pipe: the
// sender keeps up to 64 chunk writes unacknowledged and the receiver acknowledges a chunk when
// its reader takes it. A *WritableStream (NewWritableStream around a StreamSink, or received)
// exports a sink; Write waits for the sink's acknowledgement.
package capnweb
