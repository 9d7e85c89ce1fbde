package kernel_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"atelier/capnweb"
	"atelier/host/kernel"
	"atelier/sdk/guesttest"
)

const uiV1 = "export default function (gadget, root) { root.textContent = 'v1'; }"

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// clientOf returns the gadget's client() as {source, sha256}, or nil.
func clientOf(t *testing.T, g *capnweb.Promise) map[string]any {
	t.Helper()
	v := await(t, g.Call(ctx, "client"))
	if v == nil {
		return nil
	}
	return v.(map[string]any)
}

func wantClient(t *testing.T, g *capnweb.Promise, source string) {
	t.Helper()
	got := clientOf(t, g)
	if source == "" {
		if got != nil {
			t.Fatalf("client() = %v, want null", got)
		}
		return
	}
	if got == nil || got["source"] != source || got["sha256"] != sha(source) {
		t.Fatalf("client() = %v, want source %q", got, source)
	}
}

// versionsOf returns the gadget's versions as (sha256, client) pairs.
func versionsOf(t *testing.T, g *capnweb.Promise) [][2]string {
	t.Helper()
	var out [][2]string
	for _, v := range await(t, g.Call(ctx, "versions")).([]any) {
		m := v.(map[string]any)
		c, _ := m["client"].(string)
		out = append(out, [2]string{m["sha256"].(string), c})
	}
	return out
}

// TestClientScriptBelongsToVersion: client.js comes with a JS gadget's files (and stays out of
// its server code), setClient makes a version with the same code, a deploy without client.js
// keeps the UI, a rollback brings an earlier UI back, and an empty script removes it.
func TestClientScriptBelongsToVersion(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	files := jsFiles(t, todoJSGadget)
	files[kernel.ClientFile] = uiV1
	g := ws.Call(ctx, "createGadget", "todo", files, jsGrants)
	wantClient(t, g, uiV1)
	for _, line := range await(t, g.Call(ctx, "inspect")).([]any) {
		if strings.Contains(line.(string), kernel.ClientFile) {
			t.Fatalf("client.js is part of the server code: %q", line)
		}
	}
	app := g.Call(ctx, "connect")
	await(t, app.Call(ctx, "add", "kept across UI versions"))

	uiV2 := "export default function () { /* v2 */ }"
	info := await(t, g.Call(ctx, "setClient", uiV2)).(map[string]any)
	if info["current"] != float64(2) {
		t.Fatalf("setClient: current = %v, want 2", info["current"])
	}
	wantClient(t, g, uiV2)
	vs := versionsOf(t, g)
	if len(vs) != 2 || vs[0][0] != vs[1][0] || vs[0][1] != sha(uiV1) || vs[1][1] != sha(uiV2) {
		t.Fatalf("versions after setClient = %v: want the same code with UI v1 then v2", vs)
	}
	// The running instance kept its state and was not replaced by a UI change.
	if got := await(t, app.Call(ctx, "list")).([]any); len(got) != 1 {
		t.Fatalf("list after setClient = %v", got)
	}
	// The same script again changes nothing.
	if info := await(t, g.Call(ctx, "setClient", uiV2)).(map[string]any); info["current"] != float64(2) {
		t.Fatalf("setClient with the same script made a version: %v", info)
	}

	// A deploy without client.js keeps the UI; one with client.js replaces it.
	delete(files, kernel.ClientFile)
	files["extra.js"] = "export const x = 1;"
	await(t, g.Call(ctx, "deploy", files))
	wantClient(t, g, uiV2)
	uiV4 := "export default function () { /* v4 */ }"
	await(t, g.Call(ctx, "deploy", bundle(t, map[string]string{"server.ts": files["server.ts"].(string), "todo.ts": files["todo.ts"].(string), kernel.ClientFile: uiV4})))
	wantClient(t, g, uiV4)

	// Rollback brings the UI of that version back.
	await(t, g.Call(ctx, "rollback", 1))
	wantClient(t, g, uiV1)
	await(t, g.Call(ctx, "setClient", ""))
	wantClient(t, g, "")
	if vs := versionsOf(t, g); len(vs) != 5 || vs[4][1] != "" {
		t.Fatalf("versions after removing the UI = %v", vs)
	}
	if got := await(t, g.Call(ctx, "connect").Call(ctx, "list")).([]any); len(got) != 1 {
		t.Fatalf("state lost across UI versions: %v", got)
	}

	// Audit lines name the change.
	var details []string
	for _, e := range await(t, ws.Call(ctx, "auditLog", 20)).([]any) {
		if m := e.(map[string]any); m["action"] == "gadget.setClient" {
			if m["actor"] != "ada" || m["target"] != "todo" {
				t.Fatalf("audit line %v", m)
			}
			details = append(details, m["detail"].(string))
		}
	}
	want := []string{"version 5, client.js removed", "version 2, client.js sha256:" + sha(uiV2)[:12] + " (" + strconv.Itoa(len(uiV2)) + " bytes)"}
	if strings.Join(details, "|") != strings.Join(want, "|") {
		t.Fatalf("setClient audit details = %q, want %q", details, want)
	}
}

// bundle packs files as the gzip'd tar a JS gadget may be uploaded as.
func bundle(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, src := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(src)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(src)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestClientScriptRefusals: too large, a use collaborator, a stranger to the workspace, and
// an agent with the use role may not set a gadget's UI; nothing changes when they try.
func TestClientScriptRefusals(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ada := s.user(t, "ada")
	ws := ada.Call(ctx, "createWorkspace", "home")
	files := jsFiles(t, todoJSGadget)
	files[kernel.ClientFile] = uiV1
	g := ws.Call(ctx, "createGadget", "todo", files, jsGrants)
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)

	big := strings.Repeat("x", kernel.MaxClient+1)
	refused(t, g.Call(ctx, "setClient", big), "INVALID_ARGUMENT", "client.js of 1048577 bytes: at most 1048576")
	files[kernel.ClientFile] = big
	refused(t, g.Call(ctx, "deploy", files), "INVALID_ARGUMENT", "client.js of 1048577 bytes")
	refused(t, ws.Call(ctx, "createGadget", "todo2", files, jsGrants), "INVALID_ARGUMENT", "client.js of 1048577 bytes")
	refused(t, ws.Call(ctx, "createGadget", "ui-only", map[string]any{kernel.ClientFile: uiV1}, jsGrants), "INVALID_ARGUMENT", "has 0 files")
	// Exactly the limit is fine.
	edge := strings.Repeat("y", kernel.MaxClient)
	await(t, g.Call(ctx, "setClient", edge))
	wantClient(t, g, edge)
	await(t, g.Call(ctx, "setClient", uiV1))

	bob := s.user(t, "bob")
	await(t, ws.Call(ctx, "addCollaborator", "bob", "use"))
	bg := bob.Call(ctx, "openWorkspace", id).Call(ctx, "gadget", "todo")
	wantClient(t, bg, uiV1) // use may read the UI
	refused(t, bg.Call(ctx, "setClient", "export default 0"), "FORBIDDEN", "needs the build role")

	eve := s.user(t, "eve")
	refused(t, eve.Call(ctx, "openWorkspace", id).Call(ctx, "gadget", "todo").Call(ctx, "setClient", "x"), "FORBIDDEN", "no access")
	refused(t, eve.Call(ctx, "openWorkspace", id).Call(ctx, "gadget", "todo").Call(ctx, "client"), "FORBIDDEN", "no access")

	ag := await(t, ada.Call(ctx, "createAgent", "helper", map[string]any{"workspaces": map[string]any{id: map[string]any{"role": "use", "gadgets": []any{"*"}}}})).(map[string]any)
	agent := s.dial(t).Call(ctx, "authenticate", ag["token"])
	refused(t, agent.Call(ctx, "openWorkspace", id).Call(ctx, "gadget", "todo").Call(ctx, "setClient", "x"), "FORBIDDEN", "needs the build role")

	wantClient(t, g, uiV1)
	if vs := versionsOf(t, g); len(vs) != 3 {
		t.Fatalf("refused calls made versions: %v", vs)
	}
}

// TestClientComesWithComponent: createGadget and deploy take a component's UI script with the
// code, so that one version holds both; a rollback brings back each version's pairing, a deploy
// without a script keeps the UI and an empty one removes it; a JS gadget's files may not bring
// a client.js as well.
func TestClientComesWithComponent(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	code := guesttest.Bytes(t, counterGo)
	g := ws.Call(ctx, "createGadget", "counter", code, counterGrants, uiV1)
	wantClient(t, g, uiV1)
	if vs := versionsOf(t, g); len(vs) != 1 || vs[0][1] != sha(uiV1) {
		t.Fatalf("versions after createGadget with a UI = %v, want one holding the UI", vs)
	}

	uiV2 := "export default function () { /* v2 */ }"
	info := await(t, g.Call(ctx, "deploy", code, nil, uiV2)).(map[string]any)
	if info["current"] != float64(2) || fmt.Sprint(info["grants"]) != fmt.Sprint(counterGrants) {
		t.Fatalf("deploy with a UI: %v, want version 2 with the grants kept", info)
	}
	wantClient(t, g, uiV2)
	await(t, g.Call(ctx, "deploy", code)) // v3 keeps v2's UI
	wantClient(t, g, uiV2)
	await(t, g.Call(ctx, "deploy", code, nil, "")) // v4 has none
	wantClient(t, g, "")
	vs := versionsOf(t, g)
	if len(vs) != 4 || vs[1][1] != sha(uiV2) || vs[2][1] != sha(uiV2) || vs[3][1] != "" {
		t.Fatalf("versions = %v", vs)
	}
	await(t, g.Call(ctx, "rollback", 1))
	wantClient(t, g, uiV1)
	await(t, g.Call(ctx, "rollback", 2))
	wantClient(t, g, uiV2)
	await(t, g.Call(ctx, "rollback", 4))
	wantClient(t, g, "")

	files := jsFiles(t, todoJSGadget)
	files[kernel.ClientFile] = uiV1
	refused(t, ws.Call(ctx, "createGadget", "todo", files, jsGrants, uiV2), "INVALID_ARGUMENT", "pass one")
	refused(t, g.Call(ctx, "deploy", code, nil, strings.Repeat("x", kernel.MaxClient+1)), "INVALID_ARGUMENT", "client.js of 1048577 bytes")
	if vs := versionsOf(t, g); len(vs) != 4 {
		t.Fatalf("refused deploys made versions: %v", vs)
	}
}
