package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/term"
)

// terminal returns standard input as a file when it is a terminal, else nil.
func terminal(std streams) *os.File {
	if f, ok := std.in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}

// errCancelled is what a command returns when its user answered no to confirm.
var errCancelled = errors.New("cancelled: nothing was changed")

// confirm asks on the terminal whether to go ahead with what ("delete gadget todo with its
// state") unless yes (the --yes flag) is set. Without a terminal it refuses, saying to run
// retry (the command line) with --yes.
func confirm(ctx context.Context, yes bool, what, retry string) error {
	if yes {
		return nil
	}
	std := stdio(ctx)
	if terminal(std) == nil {
		return fmt.Errorf("not going to %s without a confirmation, and standard input is not a terminal to ask on: run `%s --yes`", what, retry)
	}
	fmt.Fprintf(std.err, "%s%s? This cannot be undone. [y/N] ", strings.ToUpper(what[:1]), what[1:])
	answer, err := readLine(bufio.NewReader(std.in))
	if err != nil {
		return fmt.Errorf("read the confirmation: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return errCancelled
}
