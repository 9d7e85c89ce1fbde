package main

import (
	"context"
	"flag"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
)

func versionCommand() command {
	return command{
		name:    "version",
		summary: "print the version of atelier and of its Go toolchain",
		details: "Prints the module version (or the VCS revision of a development build) and the Go version.",
		flags: func(*flag.FlagSet) func(context.Context, []string) error {
			return func(ctx context.Context, _ []string) error {
				fmt.Fprintln(stdio(ctx).out, versionString())
				return nil
			}
		},
	}
}

// versionString describes this build in one line.
func versionString() string {
	v := "devel"
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	return fmt.Sprintf("atelier %s (%s %s/%s)", v, goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
}
