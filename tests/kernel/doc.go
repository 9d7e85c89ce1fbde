// Package kernel holds the whole-server tests of the kernel: crash safety of `atelier serve`
// under SIGKILL and SIGTERM in the middle of a burst of gadget calls, and the benchmarks of the
// full call path (WebSocket -> kernel -> gadget -> kv commit -> reply) against direct
// host/runtime calls, KV latency, memory per idle workspace, idle gadget and live instance, and
// start-up time. Results and how to read them: README.md in this folder.
package kernel
