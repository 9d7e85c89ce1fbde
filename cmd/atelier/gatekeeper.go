package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// credentialInfo is one credential a gatekeeper asks for.
type credentialInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Optional    bool   `json:"optional"`
}

// gatekeeperInfo is an installed gatekeeper package as installGatekeeper and listGatekeepers
// describe it.
type gatekeeperInfo struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	Version     string           `json:"version"`
	Vendor      string           `json:"vendor"`
	Format      string           `json:"format"`
	Size        int64            `json:"size"`
	Credentials []credentialInfo `json:"credentials"`
	Resources   []struct {
		Kind       string `json:"kind"`
		URLPattern string `json:"urlPattern"`
	} `json:"resources"`
	AutoApprovable []string `json:"autoApprovable"`
	OAuth          bool     `json:"oauth"`
	OAuthClient    bool     `json:"oauthClient"`
}

func gatekeeperCommand() command {
	return command{
		name:    "gatekeeper",
		summary: "install, list and remove gatekeeper packages on a server",
		details: `A gatekeeper connects Atelier to an outside service for the users who connect an account
on it (docs/gatekeepers.md). Packages are server-wide: only the admin installs and removes
them; every user lists them.

Examples:
  atelier gatekeeper install notes.gkp
  atelier gatekeeper list
  atelier gatekeeper remove sha256:3f2a...
  atelier gatekeeper oauth-client calendar --client-id atelier-prod --client-secret-file secret.txt`,
		subcommands: []command{gatekeeperInstallCommand(), gatekeeperListCommand(), gatekeeperRemoveCommand(), gatekeeperOAuthClientCommand()},
	}
}

func gatekeeperInstallCommand() command {
	return command{
		name:    "install",
		usage:   "[--server URL] FILE",
		summary: "install a gatekeeper package (admin only)",
		details: "Uploads a package archive (a tar of manifest.json and gatekeeper.wasm) and installs it for the whole server.",
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the package file"}
				}
				archive, err := os.ReadFile(args[0])
				if err != nil {
					return fmt.Errorf("read the gatekeeper package: %w", err)
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				g, err := await[gatekeeperInfo](ctx, c, c.api.Call(ctx, "installGatekeeper", archive))
				if err != nil {
					return err
				}
				fmt.Fprintf(stdio(ctx).out, "Installed %s %s (%s, %s) as %s\n", g.Name, g.Version, g.Format, formatSize(g.Size), g.ID)
				return nil
			}
		},
	}
}

func gatekeeperListCommand() command {
	return command{
		name:    "list",
		usage:   "[--server URL] [--json]",
		summary: "list the installed gatekeeper packages",
		details: "Lists the server's gatekeeper packages with the resources and credentials an account on each needs.",
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"gatekeeper list takes no arguments"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				gs, err := await[[]gatekeeperInfo](ctx, c, c.api.Call(ctx, "listGatekeepers"))
				if err != nil {
					return err
				}
				return printList(stdio(ctx).out, gs, *asJSON,
					"No gatekeepers installed: the admin installs one with `atelier gatekeeper install FILE`.",
					"ID\tNAME\tVERSION\tVENDOR\tRESOURCES\tCREDENTIALS", func(g gatekeeperInfo) string {
						var res, creds []string
						for _, r := range g.Resources {
							res = append(res, r.Kind+" "+r.URLPattern)
						}
						for _, cr := range g.Credentials {
							creds = append(creds, cr.Name)
						}
						return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", g.ID, g.Name, g.Version, g.Vendor, strings.Join(res, ", "), strings.Join(creds, ", "))
					})
			}
		},
	}
}

func gatekeeperRemoveCommand() command {
	return command{
		name:    "remove",
		usage:   "[--server URL] ID",
		summary: "remove a gatekeeper package and its accounts (admin only)",
		details: "Uninstalls the package with the given ID (as `gatekeeper list` shows it) and disconnects every account connected to it.",
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the gatekeeper's ID"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				if _, err := await[any](ctx, c, c.api.Call(ctx, "removeGatekeeper", args[0])); err != nil {
					return err
				}
				fmt.Fprintf(stdio(ctx).out, "Removed %s\n", args[0])
				return nil
			}
		},
	}
}

func gatekeeperOAuthClientCommand() command {
	return command{
		name:    "oauth-client",
		usage:   "[--server URL] --client-id ID [--client-secret-file FILE|-] [--json] GATEKEEPER",
		summary: "configure the OAuth client of a gatekeeper (admin only)",
		details: `Sets the OAuth client that users of GATEKEEPER (its name or ID) connect their accounts
with, for a gatekeeper whose manifest declares oauth: the client id and secret the provider
issued for this server (register ` + "`<server URL>/oauth/callback`" + ` as its redirect URI). The
secret is read from --client-secret-file FILE (- for standard input; one line, the trailing
newline dropped), never from a flag value; it is sealed on the server and never shown again.
Without --client-secret-file the client is public (PKCE alone).

Examples:
  atelier gatekeeper oauth-client calendar --client-id atelier-prod --client-secret-file secret.txt
  pass show calendar-client | atelier gatekeeper oauth-client calendar --client-id atelier-prod --client-secret-file -`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			clientID := fs.String("client-id", "", "the client id the provider issued")
			secretFile := fs.String("client-secret-file", "", "a file holding the client secret (- for standard input)")
			asJSON := fs.Bool("json", false, "print the result as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 || *clientID == "" {
					return usageError{"want a gatekeeper (name or ID) and --client-id"}
				}
				var secret string
				if *secretFile != "" {
					var data []byte
					var err error
					if *secretFile == "-" {
						data, err = io.ReadAll(io.LimitReader(stdio(ctx).in, 8192))
					} else {
						data, err = os.ReadFile(*secretFile)
					}
					if err != nil {
						return fmt.Errorf("read the client secret: %w", err)
					}
					secret = strings.TrimRight(string(data), "\r\n")
					if secret == "" {
						return fmt.Errorf("the client secret file %s is empty", *secretFile)
					}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				gks, err := await[[]gatekeeperInfo](ctx, c, c.api.Call(ctx, "listGatekeepers"))
				if err != nil {
					return err
				}
				gk, err := pickGatekeeper(gks, args[0])
				if err != nil {
					return err
				}
				if _, err := await[any](ctx, c, c.api.Call(ctx, "setOAuthClient", gk.ID, *clientID, secret)); err != nil {
					return err
				}
				if *asJSON {
					return printJSON(stdio(ctx).out, map[string]any{"gatekeeper": gk.ID, "name": gk.Name, "clientId": *clientID, "public": secret == ""})
				}
				fmt.Fprintf(stdio(ctx).out, "Set the OAuth client of %s to %s. Users connect with `atelier account connect %s RESOURCE`.\n", gk.Name, *clientID, gk.Name)
				return nil
			}
		},
	}
}
