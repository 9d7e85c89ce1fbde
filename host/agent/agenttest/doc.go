// Package agenttest holds test doubles for the agent loop: Run, an in-memory kernel.ChatRun
// that records what the loop stored, emitted and called, and Script, a provider.Client that
// replies from a script of turns. Tests of host/agent and the benchmarks in tests/bench use
// them; the end-to-end tests use the real kernel and the scripted model server instead.
package agenttest
