//go:build linux

package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestAccountConnectPrompt: without --credentials-file, on a terminal, account connect asks
// for each credential the manifest names, with its description, and the terminal does not
// echo the secret typed.
func TestAccountConnectPrompt(t *testing.T) {
	boardServer(t)
	master, tty := openPTY(t)
	if !echoes(t, tty) {
		t.Fatal("a new terminal does not echo: the test would prove nothing")
	}
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"account", "connect", "board", board}, tty, &out, &errOut)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errOut.String(), "token (An API token of the user): ") || echoes(t, tty) {
		select {
		case code := <-done:
			t.Fatalf("account connect exited %d before asking with echo off: %s%s", code, out.String(), errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("account connect did not ask for the token with echo off: %q", errOut.String())
		}
	}
	if _, err := master.WriteString("typed-s3cret\n"); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 0 || !strings.Contains(out.String(), "Connected board "+board) {
		t.Fatalf("account connect: exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
	tty.Close()
	shown, _ := io.ReadAll(master) // ends with EIO once the other side is closed and drained
	if strings.Contains(string(shown), "typed-s3cret") || strings.Contains(errOut.String(), "typed-s3cret") {
		t.Fatalf("the secret was echoed: terminal %q, stderr %q", shown, errOut.String())
	}
	// The account works with the secret typed.
	ok(t, "workspace", "create", "typed")
	pin(t, board)
}
