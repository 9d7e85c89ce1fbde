package authoring

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/sdk/templates"
)

// callTimeout bounds one API call of the gatekeeper test.
const callTimeout = time.Minute

// snippet calls the template gatekeeper's session API from Code Mode: a read (observation),
// an action (queued for approval) and its kv state.
const snippet = `export default async function (env) {
  return [await env.board.hello("ada"), await env.board.pin("milk"), await env.board.pinned()];
}`

// gatekeeperTemplate is one template of `atelier new gatekeeper`: a language, and the flags
// that select it.
type gatekeeperTemplate struct {
	name string
	args []string
}

// newArgs are the arguments of `atelier new` that make the template's project name.
func (g gatekeeperTemplate) newArgs(name string) []string {
	return append(append([]string{"new", "gatekeeper"}, g.args...), name)
}

// gatekeeperTemplates are the component template of each language and the Go Extism one.
func gatekeeperTemplates() []gatekeeperTemplate {
	var out []gatekeeperTemplate
	for _, lang := range templates.Langs("gatekeeper") {
		out = append(out, gatekeeperTemplate{lang, []string{"--lang", lang}})
	}
	return append(out, gatekeeperTemplate{"go-extism", []string{"--lang", "go", "--format", templates.FormatExtism}})
}

// TestGatekeeperTemplates makes a gatekeeper from each template (each language's component
// and the Go Extism plugin) outside the repository, builds its package, installs it on a real
// server as the admin, connects an account on a board and calls it from Code Mode: the read
// answers, the pin waits for approval and, once approved, is in the gatekeeper's state.
func TestGatekeeperTemplates(t *testing.T) {
	c, admin := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	api := dialUser(t, ctx, c)
	for _, tmpl := range gatekeeperTemplates() {
		t.Run(tmpl.name, func(t *testing.T) {
			work := t.TempDir()
			name := tmpl.name + "-board"
			start := time.Now()
			c.run(work, tmpl.newArgs(name)...)
			c.run(work, "build", name)
			pkg := filepath.Join(work, name, "build", name+".gkp")
			asAdmin := cli{t: t, bin: c.bin, env: append(append([]string{}, c.env...), "ATELIER_TOKEN="+admin)}
			asAdmin.run(work, "gatekeeper", "install", pkg)
			var list []struct{ ID, Name string }
			if err := json.Unmarshal([]byte(asAdmin.run(work, "gatekeeper", "list", "--json")), &list); err != nil {
				t.Fatal(err)
			}
			id := ""
			for _, g := range list {
				if g.Name == name {
					id = g.ID
				}
			}
			if id == "" {
				t.Fatalf("gatekeeper list has no %s: %v", name, list)
			}
			acct := await(t, api.Call(ctx, "connectAccount", id, "https://api.example.com/boards/main", map[string]any{"token": "s3cret"})).(map[string]any)["id"]
			ws := api.Call(ctx, "createWorkspace", "gk-"+tmpl.name)
			res := await(t, ws.Call(ctx, "executeCode", snippet, map[string]any{"gatekeepers": map[string]any{"board": acct}})).(map[string]any)
			elapsed := time.Since(start)
			value, ok := res["value"].([]any)
			if !ok || len(value) != 3 {
				t.Fatalf("executeCode = %v", res)
			}
			if value[0] != "hello ada from board main" {
				t.Fatalf("hello = %v, want the greeting", value[0])
			}
			action := value[1].(map[string]any)["action"]
			if !reflect.DeepEqual(value[2], []any{}) {
				t.Fatalf("pinned before approval = %v, want []", value[2])
			}
			await(t, ws.Call(ctx, "approveAction", action))
			res = await(t, ws.Call(ctx, "executeCode", `export default async (env) => env.board.pinned()`, map[string]any{"gatekeepers": map[string]any{"board": acct}})).(map[string]any)
			if !reflect.DeepEqual(res["value"], []any{"milk"}) {
				t.Fatalf("pinned after approval = %v, want [milk]", res)
			}
			st, err := os.Stat(pkg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("FIGURE gatekeeper %s: new -> first answered call %s; package %d bytes", tmpl.name, elapsed.Round(10*time.Millisecond), st.Size())
		})
	}
}

// dialUser opens a session as the user the cli signed up and returns the authenticated API.
func dialUser(t *testing.T, ctx context.Context, c cli) *capnweb.Promise {
	var url string
	for _, kv := range c.env {
		if v, ok := cutEnv(kv, "ATELIER_SERVER"); ok {
			url = v
		}
	}
	s, err := capnweb.DialWebSocket(ctx, url, capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	token := await(t, s.Main().Call(ctx, "login", "ada", password)).(string)
	return s.Main().Call(ctx, "authenticate", token)
}

// cutEnv returns the value of an environment entry NAME=VALUE.
func cutEnv(entry, name string) (string, bool) {
	if len(entry) > len(name) && entry[:len(name)+1] == name+"=" {
		return entry[len(name)+1:], true
	}
	return "", false
}

// await waits for p, failing the test on an error.
func await(t *testing.T, p *capnweb.Promise) any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	v, err := p.Await(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
