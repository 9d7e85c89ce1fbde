package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

func passwordCommand() command {
	return command{
		name:    "password",
		usage:   "[--server URL] [--old-file FILE] [--new-file FILE]",
		summary: "change your password",
		details: `Changes the password of the account you are logged in as. On a terminal it asks for the
current password and twice for the new one, without echoing them. Scripts give them in files
(--old-file, --new-file: the first line of each) or on standard input (the current password on
the first line, the new one on the second); never on the command line, where other users of the
machine could read them. The admin of a new server, who has no password yet, leaves the current
one empty. Your saved login stays valid.

Examples:
  atelier password
  atelier password --old-file old.txt --new-file new.txt
  printf '%s\n%s\n' "$OLD" "$NEW" | atelier password`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			oldFile := fs.String("old-file", "", "read the current password from the first line of this file")
			newFile := fs.String("new-file", "", "read the new password from the first line of this file")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"password takes no arguments: it asks for the passwords (or reads --old-file, --new-file or standard input)"}
				}
				old, new, err := askPasswords(ctx, *oldFile, *newFile)
				if err != nil {
					return err
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				if _, err := c.api.Call(ctx, "changePassword", old, new).Await(ctx); err != nil {
					msg := errorMessage(err)
					switch {
					case errorCode(err) == "UNAUTHORIZED" && strings.Contains(msg, "old password is wrong"):
						return errors.New("the current password is wrong, so nothing changed: run `atelier password` again")
					case errorCode(err) == "UNAUTHORIZED" && lockout(msg) != "":
						return fmt.Errorf("%s\nRepeated wrong passwords hold your account back (the password was not checked): wait, then run `atelier password` again", lockout(msg))
					}
					return c.explain(err)
				}
				who := c.saved().Username
				if who == "" {
					who = "your account"
				}
				fmt.Fprintf(stdio(ctx).out, "Changed the password of %s on %s.\n", who, c.server)
				return nil
			}
		},
	}
}

// askPasswords gets the current and the new password: from the files when given, else by
// asking on the terminal (the new one twice), else from the lines of standard input.
func askPasswords(ctx context.Context, oldFile, newFile string) (old, new string, err error) {
	std := stdio(ctx)
	tty := terminal(std)
	in := bufio.NewReader(std.in)
	get := func(file, what, prompt string) (string, error) {
		switch {
		case file != "":
			f, err := os.Open(file)
			if err != nil {
				return "", fmt.Errorf("read the %s password: %w", what, err)
			}
			defer f.Close()
			line, err := readLine(bufio.NewReader(f))
			if err != nil {
				return "", fmt.Errorf("read the %s password from %s: %w", what, file, err)
			}
			return line, nil
		case tty != nil:
			return readPassword(std.err, tty, prompt)
		}
		line, err := readLine(in)
		if err != nil {
			return "", fmt.Errorf("no %s password on standard input: type it at a terminal, pipe the current and the new password in on two lines, or pass --old-file and --new-file", what)
		}
		return line, nil
	}
	if old, err = get(oldFile, "current", "Current password: "); err != nil {
		return "", "", err
	}
	if new, err = get(newFile, "new", "New password: "); err != nil {
		return "", "", err
	}
	if newFile == "" && tty != nil {
		again, err := readPassword(std.err, tty, "Repeat the new password: ")
		if err != nil {
			return "", "", err
		}
		if again != new {
			return "", "", errors.New("the two new passwords differ, so nothing changed: run `atelier password` again")
		}
	}
	if new == "" {
		return "", "", errors.New("the new password is empty: passwords have at least 8 bytes")
	}
	return old, new, nil
}
