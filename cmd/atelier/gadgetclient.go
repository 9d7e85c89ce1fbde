package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
)

// clientJS is the file of a JS gadget's folder that is its browser UI.
const clientJS = "client.js"

// clientScript is a gadget's UI script as Gadget.client() returns it.
type clientScript struct {
	Source string `json:"source"`
	SHA256 string `json:"sha256"`
}

func gadgetClientCommand() command {
	return command{
		name:    "client",
		usage:   "[--remove] NAME [FILE.js|-]",
		summary: "print, set or remove a gadget's browser UI script (client.js)",
		details: `Without FILE, prints the UI script of the gadget's current version (nothing when it has
none). With FILE (- for standard input), makes it the UI: a new version with the same code, so
that 'atelier gadget rollback' brings the earlier UI back. --remove makes a version without a
UI. Setting or removing needs the build role; scripts are at most 1 MiB of UTF-8 text.

Examples:
  atelier gadget client notes > client.js
  atelier gadget client notes gadgets/notes-js/client.js
  atelier gadget client --remove notes`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			remove := fs.Bool("remove", false, "remove the gadget's UI")
			return func(ctx context.Context, args []string) error {
				if len(args) < 1 || len(args) > 2 || (*remove && len(args) != 1) {
					return usageError{"want a gadget name, and a file to set (or --remove)"}
				}
				std := stdio(ctx)
				var source *string
				switch {
				case *remove:
					source = new(string)
				case len(args) == 2:
					src, err := readScript(args[1], std.in)
					if err != nil {
						return err
					}
					source = &src
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				g := ws.Call(ctx, "gadget", args[0])
				if source == nil {
					script, err := await[*clientScript](ctx, c, g.Call(ctx, "client"))
					if err != nil {
						return err
					}
					if script == nil {
						fmt.Fprintf(std.err, "%s has no UI script.\n", args[0])
						return nil
					}
					_, err = io.WriteString(std.out, script.Source)
					return err
				}
				info, err := await[gadgetInfo](ctx, c, g.Call(ctx, "setClient", *source))
				if err != nil {
					return err
				}
				if v := currentVersion(info); v.Client == "" {
					fmt.Fprintf(std.out, "%s has no UI now (version %d).\n", info.Name, info.Current)
				} else {
					fmt.Fprintf(std.out, "%s's UI is %s (sha256 %s) from version %d.\n", info.Name, formatSize(int64(len(*source))), shortHash(v.Client), info.Current)
				}
				return nil
			}
		},
	}
}

// readScript reads a UI script from path, or from in when path is "-".
func readScript(path string, in io.Reader) (string, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(in)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("read the UI script: %w", err)
	}
	return string(b), nil
}
