package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"atelier/capnweb"
	"atelier/host/kernel"
)

// maxUpload is the largest file the CLI sends in one call (a blueprint archive): the server
// takes messages of at most capnweb.DefaultLimits().MaxMessageSize, in which bytes travel as
// base64 (4 characters for 3 bytes), with room left for the rest of the message.
var maxUpload = int64(capnweb.DefaultLimits().MaxMessageSize)/4*3 - 64<<10

// gzipMagic starts every gzip stream, and so every blueprint export.
var gzipMagic = []byte{0x1f, 0x8b}

func blueprintCommand() command {
	return command{
		name:    "blueprint",
		summary: "publish gadgets as blueprints, share them as files and create gadgets from them",
		details: `A blueprint is a gadget's code, grants and binding names, without its data. You publish one
from a gadget, create gadgets from it in any workspace you build in, and export it as a file
(a .tar.gz) that you or another user imports on this server or another. Blueprints are your
own: 'blueprint list' shows yours only, and the commands take a blueprint's ID or its name (its
title, when only one of yours has it).

Examples:
  atelier blueprint publish todo --name "To-do list" --description "A shared list"
  atelier blueprint list
  atelier blueprint export "To-do list" -o todo.blueprint.tar.gz
  atelier blueprint import todo.blueprint.tar.gz
  atelier blueprint instantiate "To-do list" groceries -w home`,
		subcommands: []command{
			blueprintPublishCommand(), blueprintListCommand(), blueprintExportCommand(),
			blueprintImportCommand(), blueprintInstantiateCommand(),
		},
	}
}

// listBlueprints returns the caller's blueprints (the API lists them through a workspace,
// which the caller must be able to use).
func listBlueprints(ctx context.Context, c *client, ws *capnweb.Promise) ([]kernel.BlueprintInfo, error) {
	return await[[]kernel.BlueprintInfo](ctx, c, ws.Call(ctx, "listBlueprints"))
}

// findBlueprint returns the caller's blueprint whose ID, or else whose title, is key.
func findBlueprint(ctx context.Context, c *client, ws *capnweb.Promise, key string) (kernel.BlueprintInfo, error) {
	bps, err := listBlueprints(ctx, c, ws)
	if err != nil {
		return kernel.BlueprintInfo{}, err
	}
	return pickByIDOrName(bps, key, "blueprint", "atelier blueprint list",
		func(b kernel.BlueprintInfo) string { return b.ID }, func(b kernel.BlueprintInfo) string { return b.Title })
}

// blueprintByID returns blueprint id from the caller's list, for printing it after a change.
func blueprintByID(ctx context.Context, c *client, ws *capnweb.Promise, id string) (kernel.BlueprintInfo, error) {
	bps, err := listBlueprints(ctx, c, ws)
	if err != nil {
		return kernel.BlueprintInfo{}, err
	}
	for _, b := range bps {
		if b.ID == id {
			return b, nil
		}
	}
	return kernel.BlueprintInfo{}, fmt.Errorf("blueprint %s is not in your list: run `atelier blueprint list`", id)
}

func blueprintPublishCommand() command {
	return command{
		name:    "publish",
		usage:   "[--name TITLE] [--description TEXT] [--json] GADGET",
		summary: "publish a gadget's current code, grants and binding names as a blueprint",
		details: `Publishes the current version of GADGET (in the current workspace, or -w ID) as a new
blueprint of yours: its code, its grants and the names of its bindings, not its data. Needs
the build role. The name defaults to the gadget's name; publishing again makes another
blueprint.

Examples:
  atelier blueprint publish todo
  atelier blueprint publish todo --name "To-do list" --description "A list with events for live UIs"
  atelier blueprint publish todo -w ws_3k2x... --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			title := fs.String("name", "", "the blueprint's name (its title; default: the gadget's name), at most 128 bytes")
			description := fs.String("description", "", "what the blueprint is for, at most 4096 bytes")
			asJSON := fs.Bool("json", false, "print the new blueprint as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the name of the gadget to publish (see `atelier gadget list`)"}
				}
				if *title == "" {
					*title = args[0]
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				id, err := capnweb.AwaitAs[string](ctx, ws.Call(ctx, "publishBlueprint", args[0], *title, *description))
				if errorCode(err) == "NOT_FOUND" {
					return fmt.Errorf("%s\nSee the gadgets of this workspace with `atelier gadget list`", errorMessage(err))
				}
				if err != nil {
					return c.explain(err)
				}
				bp, err := blueprintByID(ctx, c, ws, id)
				if err != nil {
					return err
				}
				if *asJSON {
					return printJSON(stdio(ctx).out, bp)
				}
				fmt.Fprintf(stdio(ctx).out, "Published %s as blueprint %s (%s); grants: %s\n"+
					"Create a gadget from it with `atelier blueprint instantiate %s NAME`, or share it with `atelier blueprint export %s -o FILE`.\n",
					args[0], bp.ID, bp.Title, grantsText(bp.Grants), bp.ID, bp.ID)
				return nil
			}
		},
	}
}

func blueprintListCommand() command {
	return command{
		name:    "list",
		usage:   "[--json]",
		summary: "list your blueprints",
		details: `Lists your blueprints (published or imported) with their grants and binding names. The API
reaches them through a workspace, so a workspace must be current (or pass -w ID); the list
is the same from every workspace.

Examples:
  atelier blueprint list
  atelier blueprint list --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"blueprint list takes no arguments"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				bps, err := listBlueprints(ctx, c, ws)
				if err != nil {
					return err
				}
				return printList(stdio(ctx).out, bps, *asJSON,
					"No blueprints yet: publish one with `atelier blueprint publish GADGET`, or import a file with `atelier blueprint import FILE`.",
					"ID\tNAME\tGRANTS\tBINDINGS\tCREATED\tDESCRIPTION", func(b kernel.BlueprintInfo) string {
						bindings := strings.Join(b.Bindings, ",")
						if bindings == "" {
							bindings = "-"
						}
						return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", b.ID, b.Title, strings.Join(b.Grants, ","), bindings,
							formatTime(b.Created, "2006-01-02 15:04"), oneLine(b.Description, 60))
					})
			}
		},
	}
}

// oneLine shortens text to its first line of at most n runes, marking a cut with "...".
func oneLine(text string, n int) string {
	line, _, cut := strings.Cut(text, "\n")
	if r := []rune(line); len(r) > n {
		line, cut = string(r[:n]), true
	}
	if cut {
		line += "..."
	}
	return line
}

func blueprintExportCommand() command {
	return command{
		name:    "export",
		usage:   "-o FILE [--json] ID|NAME",
		summary: "save one of your blueprints as a file (a .tar.gz) to import elsewhere",
		details: `Writes the blueprint as a gzip'd tar of blueprint.json (name, description, grants, binding
names) and component.wasm to FILE ("-": standard output), which 'atelier blueprint import'
reads on any server. FILE is replaced only once the whole archive arrived.

Examples:
  atelier blueprint export bp_3k2x... -o todo.blueprint.tar.gz
  atelier blueprint export "To-do list" -o - | ssh other atelier blueprint import -`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			out := fs.String("o", "", `the file to write ("-": standard output); required`)
			asJSON := fs.Bool("json", false, "print what was exported as JSON: {blueprint, file, size}")
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the ID or name of one of your blueprints (see `atelier blueprint list`)"}
				}
				if *out == "" {
					return usageError{"say where to write the archive with -o FILE (or -o - for standard output)"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				bp, err := findBlueprint(ctx, c, ws, args[0])
				if err != nil {
					return err
				}
				std := stdio(ctx)
				fmt.Fprintf(std.err, "Exporting blueprint %s (%s)...\n", bp.ID, bp.Title)
				archive, err := await[[]byte](ctx, c, ws.Call(ctx, "exportBlueprint", bp.ID))
				if err != nil {
					return fmt.Errorf("export blueprint %s: %w", bp.ID, err)
				}
				report := std.out
				if *out == "-" {
					if _, err := std.out.Write(archive); err != nil {
						return fmt.Errorf("write the archive to standard output: %w", err)
					}
					report = std.err
				} else if err := writeFileAtomic(*out, archive); err != nil {
					return err
				}
				if *asJSON {
					return printJSON(report, map[string]any{"blueprint": bp, "file": *out, "size": len(archive)})
				}
				fmt.Fprintf(report, "Exported blueprint %s (%s) to %s: %s. Import it with `atelier blueprint import %s`.\n",
					bp.ID, bp.Title, *out, formatSize(int64(len(archive))), *out)
				return nil
			}
		},
	}
}

// writeFileAtomic writes data to path through a temporary file in the same folder, so that
// path holds either its old content or all of data.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readUpload reads a file (standard input for "-") that one call sends whole, refusing one
// larger than limit before reading it all.
func readUpload(ctx context.Context, path, what string, limit int64) ([]byte, error) {
	r := stdio(ctx).in
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("read the %s: %w", what, err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > limit {
			return nil, fmt.Errorf("%s is %s: a %s may be at most %s (what one call to the server carries)", path, formatSize(st.Size()), what, formatSize(limit))
		}
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read the %s: %w", what, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is over %s: a %s may be at most that much (what one call to the server carries)", path, formatSize(limit), what)
	}
	return data, nil
}

func blueprintImportCommand() command {
	return command{
		name:    "import",
		usage:   "[--json] FILE",
		summary: "add a blueprint from a file that 'atelier blueprint export' wrote",
		details: `Uploads a blueprint archive (FILE, or "-" for standard input) as a new blueprint of yours.
The server checks the component against the archive's grants, as for a deploy; a file that is
not a blueprint export is refused. The archive may be at most about 12 MiB (one call).

Examples:
  atelier blueprint import todo.blueprint.tar.gz
  atelier blueprint import todo.blueprint.tar.gz --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			asJSON := fs.Bool("json", false, "print the new blueprint as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the archive file that `atelier blueprint export` wrote"}
				}
				file := args[0]
				archive, err := readUpload(ctx, file, "blueprint archive", maxUpload)
				if err != nil {
					return err
				}
				notBlueprint := func(why string) error {
					return fmt.Errorf("%s is not a blueprint export (%s): import a .tar.gz that `atelier blueprint export ID -o FILE` wrote", file, why)
				}
				if !bytes.HasPrefix(archive, gzipMagic) {
					return notBlueprint("it is not gzip'd")
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				id, err := capnweb.AwaitAs[string](ctx, ws.Call(ctx, "importBlueprint", archive))
				if err != nil {
					if msg := errorMessage(err); errorCode(err) == "INVALID_ARGUMENT" && strings.Contains(msg, "blueprint archive: ") {
						_, why, _ := strings.Cut(msg, "blueprint archive: ")
						return notBlueprint(why)
					}
					return fmt.Errorf("import %s: %w", file, c.explain(err))
				}
				bp, err := blueprintByID(ctx, c, ws, id)
				if err != nil {
					return err
				}
				if *asJSON {
					return printJSON(stdio(ctx).out, bp)
				}
				fmt.Fprintf(stdio(ctx).out, "Imported %s as blueprint %s (%s); grants: %s\nCreate a gadget from it with `atelier blueprint instantiate %s NAME`.\n",
					file, bp.ID, bp.Title, grantsText(bp.Grants), bp.ID)
				return nil
			}
		},
	}
}

func blueprintInstantiateCommand() command {
	return command{
		name:    "instantiate",
		usage:   "[--json] ID|NAME GADGET-NAME",
		summary: "create a gadget from one of your blueprints in the current workspace",
		details: `Creates gadget GADGET-NAME in the current workspace (or -w ID) with the blueprint's code and
grants and empty state. Its bindings start unbound. Needs the build role.

Examples:
  atelier blueprint instantiate "To-do list" groceries
  atelier blueprint instantiate bp_3k2x... todo -w ws_7q1m...`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			asJSON := fs.Bool("json", false, "print the new gadget as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 {
					return usageError{"want a blueprint's ID or name (see `atelier blueprint list`) and the new gadget's name"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				bp, err := findBlueprint(ctx, c, ws, args[0])
				if err != nil {
					return err
				}
				info, err := await[gadgetInfo](ctx, c, ws.Call(ctx, "createGadgetFromBlueprint", bp.ID, args[1]).Call(ctx, "info"))
				if err != nil {
					return fmt.Errorf("create gadget %s from blueprint %s: %w", args[1], bp.ID, err)
				}
				if *asJSON {
					return printJSON(stdio(ctx).out, info)
				}
				fmt.Fprintf(stdio(ctx).out, "Created gadget %s from blueprint %s (%s); grants: %s\n", info.Name, bp.ID, bp.Title, grantsText(info.Grants))
				if len(bp.Bindings) > 0 {
					fmt.Fprintf(stdio(ctx).out, "Its bindings %s start unbound.\n", strings.Join(bp.Bindings, ", "))
				}
				return nil
			}
		},
	}
}
