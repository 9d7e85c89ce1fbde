package kernel_test

import (
	"path/filepath"
	"slices"
	"testing"

	"atelier/capnweb"
	"atelier/sdk/guesttest"
)

// TestRecordFieldsInDeclarationOrder: a WIT record a gadget returns reaches the client with
// its fields in declaration order (todo: id, title, done), alone and in a list, over
// connect() and in Code Mode.
func TestRecordFieldsInDeclarationOrder(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	app := ws.Call(ctx, "createGadget", "todo", guesttest.Bytes(t, todoJS), todoGrants).Call(ctx, "connect")
	res := run(t, ws, "export default async (env) => Object.keys(await env.todo.add('first')).join(',')")
	if res["value"] != "id,title,done" {
		t.Errorf("Code Mode: keys %v, want id,title,done", res)
	}
	keys := func(v any) []string {
		o, ok := v.(capnweb.Object)
		if !ok {
			t.Fatalf("got %#v, want an object", v)
		}
		var out []string
		for _, f := range o {
			out = append(out, f.Key)
		}
		return out
	}
	want := []string{"id", "title", "done"}
	added, err := capnweb.AwaitAs[any](ctx, app.Call(ctx, "add", "buy milk"))
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(added); !slices.Equal(got, want) {
		t.Errorf("add: keys %v, want %v", got, want)
	}
	v, err := capnweb.AwaitAs[any](ctx, app.Call(ctx, "list"))
	list, _ := v.([]any)
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %#v, %v", v, err)
	}
	if got := keys(list[1]); !slices.Equal(got, want) {
		t.Errorf("list: keys %v, want %v", got, want)
	}
}
