package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"atelier/host/kernel"
	"atelier/sdk/guesttest"
)

// signupAs signs up username on the server of $ATELIER_SERVER with its own credentials file,
// and returns a function that makes the following commands run as that user.
func signupAs(t *testing.T, username string) func() {
	t.Helper()
	dir := t.TempDir()
	as := func() { t.Setenv("XDG_CONFIG_HOME", dir) }
	as()
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", username)
	t.Setenv("ATELIER_PASSWORD", "")
	return as
}

// workspaceID returns the ID of the caller's workspace named name.
func workspaceID(t *testing.T, name string) string {
	t.Helper()
	var ws []workspaceInfo
	if err := json.Unmarshal([]byte(ok(t, "workspace", "list", "--json")), &ws); err != nil {
		t.Fatal(err)
	}
	w, err := pickWorkspace(ws, name)
	if err != nil {
		t.Fatal(err)
	}
	return w.ID
}

// archiveEntries lists the names of the files in a gzip'd tar.
func archiveEntries(t *testing.T, data []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the export is not gzip'd: %v", err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatalf("the export is not a tar: %v", err)
		}
		names = append(names, h.Name)
	}
}

// TestBlueprintCommands publishes a gadget as a blueprint, lists it, exports it to a file,
// imports the file as another user, creates a gadget from it in that user's workspace and
// calls it; and checks the refusals: a missing blueprint, files that are not exports.
func TestBlueprintCommands(t *testing.T) {
	counter := guesttest.Path(t, "gadgets/counter-go")
	isolate(t)
	t.Setenv("ATELIER_SERVER", startServer(t))
	dir := t.TempDir()

	asAda := signupAs(t, "ada")
	fails(t, 1, []string{"blueprint", "list"}, "no workspace selected", "atelier workspace use")
	ok(t, "workspace", "create", "home")
	ok(t, "gadget", "deploy", "counter", counter, "--grant", "atelier:host/kv,atelier:host/log")
	ok(t, "gadget", "call", "counter", "increment", "5")
	if out := ok(t, "blueprint", "list"); !strings.Contains(out, "No blueprints yet") || !strings.Contains(out, "atelier blueprint publish") {
		t.Fatalf("blueprint list before any = %q", out)
	}
	fails(t, 1, []string{"blueprint", "publish", "nothing"}, "nothing", "atelier gadget list")
	out := ok(t, "blueprint", "publish", "counter", "--name", "Counter", "--description", "counts\nup")
	id := regexp.MustCompile(`as blueprint (bp_[a-z0-9]+) \(Counter\); grants: atelier:host/kv, atelier:host/log`).FindStringSubmatch(out)
	if id == nil || !strings.Contains(out, "atelier blueprint instantiate "+id[1]) {
		t.Fatalf("blueprint publish said %q", out)
	}
	if out := ok(t, "blueprint", "list"); !strings.Contains(out, id[1]) || !strings.Contains(out, "Counter") || !strings.Contains(out, "counts...") {
		t.Fatalf("blueprint list = %q, want %s Counter with the description's first line", out, id[1])
	}
	var bps []kernel.BlueprintInfo
	if err := json.Unmarshal([]byte(ok(t, "blueprint", "list", "--json")), &bps); err != nil ||
		len(bps) != 1 || bps[0].ID != id[1] || bps[0].Description != "counts\nup" || !slices.Equal(bps[0].Grants, []string{"atelier:host/kv", "atelier:host/log"}) {
		t.Fatalf("blueprint list --json = %+v, %v", bps, err)
	}

	file := filepath.Join(dir, "counter.blueprint.tar.gz")
	fails(t, 2, []string{"blueprint", "export", "Counter"}, "-o FILE")
	fails(t, 1, []string{"blueprint", "export", "Nothing", "-o", file}, `no blueprint with the ID or name "Nothing"`, "atelier blueprint list")
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a refused export left %s (%v)", file, err)
	}
	out = ok(t, "blueprint", "export", "Counter", "-o", file)
	archive, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "to "+file+": "+formatSize(int64(len(archive)))) || !strings.Contains(out, "atelier blueprint import") {
		t.Fatalf("blueprint export said %q, want the file and its size %d", out, len(archive))
	}
	if got := archiveEntries(t, archive); !slices.Equal(got, []string{"blueprint.json", "component.wasm"}) {
		t.Fatalf("the export holds %q", got)
	}
	// -o - writes the same bytes to standard output, the report to standard error.
	r := atelier(context.Background(), "", "blueprint", "export", id[1], "-o", "-", "--json")
	if r.code != 0 || !bytes.Equal([]byte(r.stdout), archive) || !strings.Contains(r.err, `"size": `+strconv.Itoa(len(archive))) {
		t.Fatalf("export -o -: exit %d, %d bytes (want the %d of the file), stderr %q", r.code, len(r.stdout), len(archive), r.err)
	}

	// Another user imports the file into their blueprints and instantiates it.
	asBob := signupAs(t, "bob")
	ok(t, "workspace", "create", "lab")
	fails(t, 1, []string{"blueprint", "export", id[1], "-o", filepath.Join(dir, "x")}, "no blueprint", "atelier blueprint list")
	garbage := filepath.Join(dir, "garbage.tar.gz")
	if err := os.WriteFile(garbage, []byte("#!/bin/sh\necho not an archive\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fails(t, 1, []string{"blueprint", "import", garbage}, garbage+" is not a blueprint export", "not gzip'd", "atelier blueprint export")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("a gzip'd text, not a tar"))
	zw.Close()
	if err := os.WriteFile(garbage, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fails(t, 1, []string{"blueprint", "import", garbage}, garbage+" is not a blueprint export", "atelier blueprint export")
	fails(t, 1, []string{"blueprint", "import", filepath.Join(dir, "missing.tar.gz")}, "read the blueprint archive", "no such file")
	huge := filepath.Join(dir, "huge.tar.gz")
	if err := os.WriteFile(huge, gzipMagic, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, maxUpload+1); err != nil {
		t.Fatal(err)
	}
	fails(t, 1, []string{"blueprint", "import", huge}, "a blueprint archive may be at most "+formatSize(maxUpload))
	out = ok(t, "blueprint", "import", file)
	imported := regexp.MustCompile(`Imported .* as blueprint (bp_[a-z0-9]+) \(Counter\)`).FindStringSubmatch(out)
	if imported == nil || imported[1] == id[1] {
		t.Fatalf("blueprint import said %q, want a new blueprint Counter", out)
	}
	if out := ok(t, "blueprint", "list"); !strings.Contains(out, imported[1]) || strings.Contains(out, id[1]) {
		t.Fatalf("bob's blueprint list = %q, want only his import %s", out, imported[1])
	}
	fails(t, 1, []string{"blueprint", "instantiate", "Nothing", "c"}, "no blueprint", "atelier blueprint list")
	if out := ok(t, "blueprint", "instantiate", "Counter", "tally"); !strings.Contains(out, "Created gadget tally from blueprint "+imported[1]) {
		t.Fatalf("blueprint instantiate said %q", out)
	}
	if out := ok(t, "gadget", "call", "tally", "get"); strings.TrimSpace(out) != "0" {
		t.Fatalf("the new gadget's count = %q, want 0 (a blueprint carries no data)", out)
	}
	if out := ok(t, "gadget", "call", "tally", "increment", "2"); strings.TrimSpace(out) != "2" {
		t.Fatalf("tally increment 2 = %q", out)
	}
	fails(t, 1, []string{"blueprint", "instantiate", "Counter", "tally"}, "CONFLICT")

	// The owner instantiates into another workspace than the current one with -w.
	asAda()
	home := workspaceID(t, "home")
	ok(t, "workspace", "create", "spare")
	var info gadgetInfo
	if err := json.Unmarshal([]byte(ok(t, "blueprint", "instantiate", id[1], "copy", "-w", home, "--json")), &info); err != nil ||
		info.Name != "copy" || info.Current != 1 {
		t.Fatalf("blueprint instantiate --json = %+v, %v", info, err)
	}
	if out := ok(t, "gadget", "call", "copy", "increment", "3", "--workspace", home); strings.TrimSpace(out) != "3" {
		t.Fatalf("copy increment 3 in home = %q", out)
	}
	if out := ok(t, "gadget", "list"); strings.Contains(out, "copy") {
		t.Fatalf("the current workspace spare lists %q, want copy only in home", out)
	}
	// An archive on standard input; then two blueprints have the name, and it is ambiguous.
	if r := atelier(context.Background(), string(archive), "blueprint", "import", "-"); r.code != 0 || !strings.Contains(r.stdout, "(Counter)") {
		t.Fatalf("blueprint import - : exit %d, %q %q", r.code, r.stdout, r.err)
	}
	fails(t, 1, []string{"blueprint", "export", "Counter", "-o", filepath.Join(dir, "y")}, `2 of your blueprints are named "Counter"`, "pass the ID")
	asBob()
	if out := ok(t, "gadget", "call", "tally", "get"); strings.TrimSpace(out) != "2" {
		t.Fatalf("bob's tally after ada's changes = %q, want 2", out)
	}
}

// TestScheduleCommands schedules a gadget call every second, sees it listed and fire (its
// effect on the gadget's state), cancels it, and runs a one-shot; and checks the refusals:
// bad intervals and arguments, unknown gadgets and functions, and another user's cancel.
func TestScheduleCommands(t *testing.T) {
	counter := guesttest.Path(t, "gadgets/counter-go")
	isolate(t)
	t.Setenv("ATELIER_SERVER", startServer(t))
	asAda := signupAs(t, "ada")
	ok(t, "workspace", "create", "home")
	ok(t, "gadget", "deploy", "counter", counter, "--grant", "atelier:host/kv,atelier:host/log")
	if out := ok(t, "schedule", "list"); !strings.Contains(out, "No schedules") || !strings.Contains(out, "atelier schedule add") {
		t.Fatalf("schedule list before any = %q", out)
	}

	fails(t, 2, []string{"schedule", "add", "counter", "increment", "1"}, "--every DURATION, --at TIME or --in DURATION")
	fails(t, 2, []string{"schedule", "add", "counter", "increment", "1", "--every", "soon"}, `--every "soon" is not a positive duration`)
	fails(t, 2, []string{"schedule", "add", "counter", "increment", "1", "--every", "-5s"}, "not a positive duration")
	fails(t, 1, []string{"schedule", "add", "counter", "increment", "1", "--every", "10ms"}, "--every 10ms is too short: this server runs a schedule at most every 1s")
	fails(t, 2, []string{"schedule", "add", "counter", "increment", "1", "--every", "1s", "--in", "1m"}, "only one of")
	fails(t, 2, []string{"schedule", "add", "counter", "increment", "--at", "tomorrow"}, "not an RFC 3339 time")
	fails(t, 2, []string{"schedule", "add", "counter", "increment", "--args", "1", "--every", "1s"}, "not a JSON array")
	fails(t, 2, []string{"schedule", "add", "counter", "increment", "1", "--args", "[1]", "--every", "1s"}, "not both")
	fails(t, 1, []string{"schedule", "add", "nothing", "increment", "1", "--every", "1s"}, `has no gadget "nothing"`, "atelier gadget list")
	fails(t, 1, []string{"schedule", "add", "counter", "fly", "--every", "1s"}, `no exported function "fly"`, "atelier inspect")
	fails(t, 1, []string{"schedule", "add", "counter", "increment", "--every", "1s"}, "INVALID_ARGUMENT", "increment takes 1 argument")

	out := ok(t, "schedule", "add", "counter", "increment", "--args", "[1]", "--every", "1s")
	m := regexp.MustCompile(`Scheduled counter.increment every 1s as (sch_[a-z0-9]+); next run `).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "atelier schedule cancel "+m[1]) {
		t.Fatalf("schedule add said %q", out)
	}
	id := m[1]
	if out := ok(t, "schedule", "list"); !strings.Contains(out, id) || !strings.Contains(out, "counter.increment [1]") || !strings.Contains(out, "every 1s") || !strings.Contains(out, "ada") {
		t.Fatalf("schedule list = %q, want %s calling counter.increment [1] every 1s by ada", out, id)
	}
	// It fires: the count grows without any call of ours, and the list counts the runs.
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := strconv.Atoi(strings.TrimSpace(ok(t, "gadget", "call", "counter", "get")))
		if err != nil {
			t.Fatal(err)
		}
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the schedule never ran twice within a minute: count %d; schedules:\n%s", n, ok(t, "schedule", "list"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	var ss []kernel.ScheduleInfo
	if err := json.Unmarshal([]byte(ok(t, "schedule", "list", "--json")), &ss); err != nil || len(ss) != 1 ||
		ss[0].ID != id || ss[0].Gadget != "counter" || ss[0].Method != "increment" || ss[0].EveryMs != 1000 || ss[0].Runs < 1 || ss[0].LastError != "" {
		t.Fatalf("schedule list --json = %+v, %v; want %s with runs and no error", ss, err, id)
	}

	// Another user cannot cancel it: not from their workspace, not in ada's.
	asAda()
	home := workspaceID(t, "home")
	signupAs(t, "bob")
	ok(t, "workspace", "create", "lab")
	fails(t, 1, []string{"schedule", "cancel", id}, "this workspace has no schedule "+id, "atelier schedule list")
	fails(t, 1, []string{"schedule", "cancel", id, "-w", home}, "no access to workspace", "FORBIDDEN")
	fails(t, 1, []string{"schedule", "list", "-w", home}, "FORBIDDEN")
	asAda()
	if out := ok(t, "schedule", "list"); !strings.Contains(out, id) {
		t.Fatalf("after bob's attempts the list = %q, want %s still there", out, id)
	}

	if out := ok(t, "schedule", "cancel", id); !strings.Contains(out, "Cancelled schedule "+id) {
		t.Fatalf("schedule cancel said %q", out)
	}
	if out := ok(t, "schedule", "list"); strings.Contains(out, id) || !strings.Contains(out, "No schedules") {
		t.Fatalf("schedule list after cancel = %q", out)
	}
	fails(t, 1, []string{"schedule", "cancel", id}, "no schedule "+id)

	// A one-shot at a past time runs at once and is then gone.
	count := func() int {
		n, err := strconv.Atoi(strings.TrimSpace(ok(t, "gadget", "call", "counter", "get")))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	var one struct {
		ID   string    `json:"id"`
		Next time.Time `json:"next"`
	}
	if err := json.Unmarshal([]byte(ok(t, "schedule", "add", "counter", "increment", "1000", "--at", "2000-01-01T00:00:00Z", "--json")), &one); err != nil ||
		!strings.HasPrefix(one.ID, "sch_") || one.Next.Year() != 2000 {
		t.Fatalf("schedule add --at --json = %+v, %v", one, err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		out := ok(t, "schedule", "list")
		if count() >= before+1000 && !strings.Contains(out, one.ID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the one-shot never ran and ended within a minute: count %d (before %d); schedules:\n%s", count(), before, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out := ok(t, "schedule", "add", "counter", "increment", "7", "--in", "2d"); !strings.Contains(out, "counter.increment once as sch_") {
		t.Fatalf("schedule add --in said %q", out)
	}
}

// TestBlueprintScheduleHelp: every blueprint and schedule command shows examples in its help.
func TestBlueprintScheduleHelp(t *testing.T) {
	for _, g := range []command{blueprintCommand(), scheduleCommand()} {
		for _, c := range append([]command{g}, g.subcommands...) {
			if !strings.Contains(c.details, "Example") || !strings.Contains(c.details, "atelier "+g.name) {
				t.Errorf("atelier %s %s: the help has no example: %q", g.name, c.name, c.details)
			}
		}
	}
	if h := ok(t, "help", "schedule", "add"); !strings.Contains(h, "-every") || !strings.Contains(h, "-at") || !strings.Contains(h, "-in") || !strings.Contains(h, "-args") {
		t.Errorf("atelier help schedule add = %q, want --every, --at, --in and --args", h)
	}
}
