package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"atelier/host/gatekeeper"
	"atelier/host/gatekeeper/mcpgk"
	capnwebtests "atelier/tests/capnweb"
)

// everythingServer returns the entry point of npm's server-everything (tests/mcpservers,
// installed by scripts/setup.sh).
func everythingServer(b *testing.B) string {
	path, err := filepath.Abs(filepath.Join("..", "mcpservers", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		b.Fatalf("server-everything is not installed (%v): run scripts/setup.sh --deps", err)
	}
	return path
}

// BenchmarkMCP measures one call of the read-only tool get-sum of server-everything (over
// stdio, a node process of its own) through the MCP gatekeeper (a session of an instance, as
// a gadget binding or a snippet calls it: JSON arguments in, the call, an observation
// recorded, JSON out) against the same call made directly with the MCP Go SDK's client, back
// to back in the same run (goal: at most 1.5x). server-cpu-ns/op is the server process's CPU
// time per call.
func BenchmarkMCP(b *testing.B) {
	ctx := context.Background()
	server := everythingServer(b)

	b.Run("mcp-gatekeeper", func(b *testing.B) {
		pidFile := filepath.Join(b.TempDir(), "pid")
		gk, err := mcpgk.New(mcpgk.Config{Stdio: map[string][]string{"everything": {"sh", "-c", fmt.Sprintf("echo $$ > %q; exec node %q stdio", pidFile, server)}}})
		if err != nil {
			b.Fatal(err)
		}
		inst, err := gk.Start(ctx, gatekeeper.Account{Name: "bench", Resource: "stdio:everything", Queue: discardQueue{}})
		if err != nil {
			b.Fatal(err)
		}
		defer inst.Close()
		sess, err := inst.OpenSession(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		call := func() {
			out, err := sess.Call(ctx, "get_sum", `[{"a":2,"b":3}]`)
			if err != nil || !strings.Contains(out, "5") {
				b.Fatalf("get_sum = %s, %v", out, err)
			}
		}
		call()
		raw, err := os.ReadFile(pidFile)
		if err != nil {
			b.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil {
			b.Fatal(err)
		}
		measure(b, pid, call)
	})

	// A Code Mode snippet's pattern, per op: one instance lists the tools (for env.NAME), a
	// second opens the session, makes the call and closes. connections/op counts the server
	// processes started per op (each connection to a stdio server is a process).
	b.Run("mcp-snippet", func(b *testing.B) {
		starts := filepath.Join(b.TempDir(), "starts")
		gk, err := mcpgk.New(mcpgk.Config{Stdio: map[string][]string{"everything": {"sh", "-c", fmt.Sprintf("echo $$ >> %q; exec node %q stdio", starts, server)}}})
		if err != nil {
			b.Fatal(err)
		}
		acct := gatekeeper.Account{Name: "bench", Resource: "stdio:everything", Queue: discardQueue{}}
		snippet := func() {
			tools, err := gk.Start(ctx, acct)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tools.SessionMethods(ctx); err != nil {
				b.Fatal(err)
			}
			tools.Close()
			inst, err := gk.Start(ctx, acct)
			if err != nil {
				b.Fatal(err)
			}
			defer inst.Close()
			sess, err := inst.OpenSession(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			if out, err := sess.Call(ctx, "get_sum", `[{"a":2,"b":3}]`); err != nil || !strings.Contains(out, "5") {
				b.Fatalf("get_sum = %s, %v", out, err)
			}
		}
		snippet()
		before := processStarts(b, starts)
		b.ResetTimer()
		for range b.N {
			snippet()
		}
		b.StopTimer()
		b.ReportMetric(float64(processStarts(b, starts)-before)/float64(b.N), "connections/op")
		gk.Close()
	})

	b.Run("mcp-direct", func(b *testing.B) {
		cmd := exec.Command("node", server, "stdio")
		client := gomcp.NewClient(&gomcp.Implementation{Name: "bench"}, nil)
		cs, err := client.Connect(ctx, &gomcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		call := func() {
			res, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: "get-sum", Arguments: map[string]any{"a": 2, "b": 3}})
			if err != nil || res.IsError {
				b.Fatalf("get-sum = %v, %v", res, err)
			}
		}
		call()
		measure(b, cmd.Process.Pid, call)
	})
}

// processStarts counts the lines of file, one per server process started.
func processStarts(b *testing.B, file string) int {
	raw, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	return strings.Count(string(raw), "\n")
}

// measure runs call b.N times and reports the CPU time process pid spent per call.
func measure(b *testing.B, pid int, call func()) {
	cpu0, err := capnwebtests.ProcessCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		call()
	}
	b.StopTimer()
	cpu1, err := capnwebtests.ProcessCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "server-cpu-ns/op")
}

// discardQueue is a gatekeeper.Queue that records nothing (the kernel's queue commits each
// observation to the workspace's store: BenchmarkPath measures commits).
type discardQueue struct{}

func (discardQueue) Observe(context.Context, gatekeeper.ObservationRecord) error { return nil }
func (discardQueue) Submit(context.Context, gatekeeper.ActionRecord) (uint64, error) {
	return 0, fmt.Errorf("the benchmark submits no actions")
}
func (discardQueue) Drain(context.Context, string) error { return nil }
