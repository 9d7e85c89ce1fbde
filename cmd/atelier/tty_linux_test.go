package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/term"
)

// openPTY opens a pseudo-terminal: what the test writes to master, a command reads from
// terminal as if typed. Both are closed when the test ends.
func openPTY(t *testing.T) (master, terminal *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var unlock, n int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock the pseudo-terminal: %v", e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("number of the pseudo-terminal: %v", e)
	}
	terminal, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { terminal.Close() })
	if !term.IsTerminal(int(terminal.Fd())) {
		t.Fatal("the pseudo-terminal is not a terminal")
	}
	return master, terminal
}

// typed runs args with a terminal as standard input on which the user typed input.
func typed(t *testing.T, input string, args ...string) result {
	t.Helper()
	master, tty := openPTY(t)
	if _, err := master.WriteString(input); err != nil {
		t.Fatal(err)
	}
	var out, errOut lockedBuffer
	code := run(context.Background(), args, tty, &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// TestTerminalPrompts answers the questions the commands ask on a terminal: a delete asks
// for a confirmation (no keeps the gadget, yes deletes it), and `atelier password` asks for the
// current and the new password twice, without echoing them.
func TestTerminalPrompts(t *testing.T) {
	newUsers(t, "ada")
	ok(t, "workspace", "create", "home")
	ok(t, append([]string{"gadget", "deploy", "todo"}, todoJS...)...)

	r := typed(t, "n\n", "gadget", "delete", "todo")
	if r.code != 1 || !strings.Contains(r.err, "Delete gadget todo with its state and 1 version? This cannot be undone. [y/N]") ||
		!strings.Contains(r.err, "cancelled: nothing was changed") {
		t.Fatalf("answering no: exit %d, %q", r.code, r.err)
	}
	want(t, ok(t, "gadget", "list"), "todo")
	if r := typed(t, "y\n", "gadget", "delete", "todo"); r.code != 0 || !strings.Contains(r.stdout, "Deleted gadget todo") {
		t.Fatalf("answering yes: exit %d, %q %q", r.code, r.stdout, r.err)
	}
	want(t, ok(t, "gadget", "list"), "No gadgets yet")
	if r := typed(t, "yes\n", "workspace", "delete", "home"); r.code != 0 || !strings.Contains(r.err, "Delete workspace home (ws_") ||
		!strings.Contains(r.stdout, "Deleted workspace home") {
		t.Fatalf("workspace delete answering yes: exit %d, %q %q", r.code, r.stdout, r.err)
	}

	r = typed(t, "correct horse battery staple\nnew password 1\nnew password 2\n", "password")
	if r.code != 1 || !strings.Contains(r.err, "the two new passwords differ") {
		t.Fatalf("password with two different new ones: exit %d, %q", r.code, r.err)
	}
	// Type each password once its prompt shows and the terminal stopped echoing; the
	// terminal must then have shown none of them.
	master, tty := openPTY(t)
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), []string{"password"}, tty, &out, &errOut) }()
	answers := []string{"correct horse battery staple", "new password 1", "new password 1"}
	for i, prompt := range []string{"Current password: ", "New password: ", "Repeat the new password: "} {
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(errOut.String(), prompt) || echoes(t, tty) {
			if time.Now().After(deadline) {
				t.Fatalf("password did not ask %q without echo: %q", prompt, errOut.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := master.WriteString(answers[i] + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	if code := <-done; code != 0 || !strings.Contains(out.String(), "Changed the password of ada") {
		t.Fatalf("password on a terminal: exit %d, %q %q", code, out.String(), errOut.String())
	}
	tty.Close()
	shown, _ := io.ReadAll(master) // ends with EIO once the other side is closed and drained
	if strings.Contains(string(shown), "password") || strings.Contains(string(shown), "horse") {
		t.Fatalf("the terminal echoed a password: %q", shown)
	}
	t.Setenv("ATELIER_PASSWORD", "new password 1")
	ok(t, "login", "--username", "ada")
}

// echoes reports whether the terminal f echoes what is typed.
func echoes(t *testing.T, f *os.File) bool {
	var tios syscall.Termios
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&tios))); e != 0 {
		t.Fatalf("read the terminal's settings: %v", e)
	}
	return tios.Lflag&syscall.ECHO != 0
}
