package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// adminTokenLine finds the admin token `atelier serve` prints on its first run.
var adminTokenLine = regexp.MustCompile(`admin token[^\n]*\n\s+(\S+)`)

// TestAdminQuotaCommands: the admin lists the quotas (table and JSON) and sets them with units,
// "unlimited" and "default"; a user's create past a quota is refused naming it; a user may not
// run the commands, and bad names and values are command-line errors.
func TestAdminQuotaCommands(t *testing.T) {
	isolate(t)
	url, out := serveOut(t)
	t.Setenv("ATELIER_SERVER", url)
	m := adminTokenLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("atelier serve printed no admin token: %s", out.String())
	}
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", "ada")
	fails(t, 1, []string{"admin", "quota"}, "FORBIDDEN", "only the server's admin")
	fails(t, 1, []string{"admin", "quota", "set", "workspaces", "9"}, "FORBIDDEN")

	t.Setenv("ATELIER_TOKEN", m[1])
	list := ok(t, "admin", "quota")
	for _, want := range []string{"QUOTA", "stored_bytes", "1 GiB", "host_memory", "8 GiB", "calls_per_second", "workspace"} {
		if !strings.Contains(list, want) {
			t.Fatalf("admin quota does not show %q:\n%s", want, list)
		}
	}
	if got := ok(t, "admin", "quota", "set", "stored_bytes", "512MiB"); !strings.Contains(got, "quota stored_bytes set to 512 MiB") {
		t.Fatalf("admin quota set said %q", got)
	}
	ok(t, "admin", "quota", "set", "host_memory", "unlimited")
	ok(t, "admin", "quota", "set", "workspaces", "1")
	var qs []struct {
		Name           string
		Value, Default int64
	}
	if err := json.Unmarshal([]byte(ok(t, "admin", "quota", "--json")), &qs); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int64{"stored_bytes": {512 << 20, 1 << 30}, "host_memory": {-1, 8 << 30}, "workspaces": {1, 50}, "gadgets": {200, 200}}
	for _, q := range qs {
		if w, ok := want[q.Name]; ok && (q.Value != w[0] || q.Default != w[1]) {
			t.Errorf("admin quota --json: %s = %d (default %d), want %d (default %d)", q.Name, q.Value, q.Default, w[0], w[1])
		}
	}
	fails(t, 2, []string{"admin", "quota", "set", "nope", "1"}, `no quota "nope"`, "workspaces, gadgets")
	fails(t, 2, []string{"admin", "quota", "set", "gadgets", "lots"}, "not a number")
	fails(t, 2, []string{"admin", "quota", "extra"}, "atelier admin quota set NAME VALUE")

	t.Setenv("ATELIER_TOKEN", "")
	ok(t, "workspace", "create", "home")
	fails(t, 1, []string{"workspace", "create", "lab"}, "RESOURCE_EXHAUSTED", "quota workspaces exceeded: user ada has 1 of 1", "atelier admin quota set workspaces")
	t.Setenv("ATELIER_TOKEN", m[1])
	if got := ok(t, "admin", "quota", "set", "workspaces", "default"); !strings.Contains(got, "quota workspaces set to its default") {
		t.Fatalf("admin quota set default said %q", got)
	}
	t.Setenv("ATELIER_TOKEN", "")
	ok(t, "workspace", "create", "lab")
}

// TestAdminPassword: with the first-run admin token the admin sets a password (read from
// standard input) and logs in with it; setting it again needs the current one (--current); a
// short password, a wrong current one and another user are refused with what to do.
func TestAdminPassword(t *testing.T) {
	isolate(t)
	url, out := serveOut(t)
	t.Setenv("ATELIER_SERVER", url)
	m := adminTokenLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("atelier serve printed no admin token: %s", out.String())
	}
	ctx := context.Background()
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", "ada")
	if r := atelier(ctx, "another good password\n", "admin", "password"); r.code != 1 || !strings.Contains(r.err, `you are user "ada"`) || !strings.Contains(r.err, "ATELIER_TOKEN") {
		t.Fatalf("admin password as ada: exit %d, %q", r.code, r.err)
	}

	t.Setenv("ATELIER_TOKEN", m[1])
	t.Setenv("ATELIER_PASSWORD", "")
	if r := atelier(ctx, "", "admin", "password"); r.code != 1 || !strings.Contains(r.err, "no password on standard input") {
		t.Fatalf("admin password without input: exit %d, %q", r.code, r.err)
	}
	if r := atelier(ctx, "short\n", "admin", "password"); r.code != 1 || !strings.Contains(r.err, "password: want 8 to 1024 bytes") {
		t.Fatalf("admin password with a short one: exit %d, %q", r.code, r.err)
	}
	if r := atelier(ctx, "first admin password\n", "admin", "password"); r.code != 0 || !strings.Contains(r.stdout, "The password of admin is set") {
		t.Fatalf("admin password: exit %d, %q %q", r.code, r.stdout, r.err)
	}
	if r := atelier(ctx, "second admin password\n", "admin", "password"); r.code != 1 || !strings.Contains(r.err, "atelier admin password --current") {
		t.Fatalf("admin password again without --current: exit %d, %q", r.code, r.err)
	}
	if r := atelier(ctx, "not the password\nsecond admin password\n", "admin", "password", "--current"); r.code != 1 || !strings.Contains(r.err, "the current password is wrong") {
		t.Fatalf("admin password --current with a wrong one: exit %d, %q", r.code, r.err)
	}
	if r := atelier(ctx, "first admin password\nsecond admin password\n", "admin", "password", "--current"); r.code != 0 {
		t.Fatalf("admin password --current: exit %d, %q", r.code, r.err)
	}

	t.Setenv("ATELIER_TOKEN", "")
	t.Setenv("ATELIER_PASSWORD", "second admin password")
	if got := ok(t, "login", "--username", "admin"); !strings.Contains(got, "as admin") {
		t.Fatalf("login as admin said %q", got)
	}
	ok(t, "admin", "quota") // the saved login is the admin's
	fails(t, 2, []string{"admin", "password", "extra"}, "takes no arguments")
}
