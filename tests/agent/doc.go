// Package agent holds the end-to-end tests of the agent loop: host/agent answering in the
// chats of a real kernel (bbolt file, Wasmtime runtime, Cap'n Web over WebSocket), its model
// the scripted model server of tests/modelserver reached through the real provider clients.
package agent
