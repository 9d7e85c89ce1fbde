package capnweb_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/tests/capnweb/conformance/api"
)

// TestKeyOrderWire sends what a JavaScript client sends and checks the exact text the server
// answers: objects come back with their keys in the order they were written (echo, nested
// objects and arrays, a map() result built as {id, hi}), and a repeated key keeps its first
// position and its last value, as JSON.parse does.
func TestKeyOrderWire(t *testing.T) {
	serverEnd, clientEnd := capnweb.Pipe()
	server := capnweb.NewSession(serverEnd, capnweb.Options{Main: &api.API{}})
	defer server.Close()
	steps := []struct{ send, want string }{
		{`["push",["pipeline",0,["echo"],[{"b":1,"a":2}]]]`, ""},
		{`["pull",1]`, `["resolve",1,{"b":1,"a":2}]`},
		{`["push",["pipeline",0,["echo"],[{"z":{"y":[[{"d":1,"c":[[{"f":0,"e":0}]]}]],"x":null},"a":[[]]}]]]`, ""},
		{`["pull",2]`, `["resolve",2,{"z":{"y":[[{"d":1,"c":[[{"f":0,"e":0}]]}]],"x":null},"a":[[]]}]`},
		{`["push",["pipeline",0,["echo"],[{"b":1,"a":2,"b":3}]]]`, ""},
		{`["pull",3]`, `["resolve",3,{"b":3,"a":2}]`},
		{`["push",["pipeline",0,["getUserIds"],[]]]`, ""},
		{`["push",["remap",4,[],[["import",0]],[["pipeline",-1,["getUserName"],[["pipeline",0]]],{"id":["pipeline",0],"hi":["pipeline",1]}]]]`, ""},
		{`["pull",5]`, `["resolve",5,[[{"id":1,"hi":"alice"},{"id":2,"hi":"bob"},{"id":3,"hi":"carol"}]]]`},
	}
	for _, st := range steps {
		if err := clientEnd.WriteMessage([]byte(st.send)); err != nil {
			t.Fatal(err)
		}
		if st.want == "" {
			continue
		}
		got := make(chan string, 1)
		go func() {
			m, err := clientEnd.ReadMessage()
			if err != nil {
				m = []byte(err.Error())
			}
			got <- string(m)
		}()
		select {
		case m := <-got:
			if m != st.want {
				t.Errorf("after %s: server sent %s, want %s", st.send, m, st.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("after %s: no answer, want %s", st.send, st.want)
		}
	}
}

// TestKeyOrderGoClient checks the same over WebSocket with the Go client: an Object sent keeps
// its order through echo and map(), AwaitAs with any or Object sees it, Await gives maps.
func TestKeyOrderGoClient(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(newServer(nil).ServeWebSocket))
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := capnweb.DialWebSocket(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := s.Main()

	in := capnweb.Object{
		{Key: "b", Value: 1},
		{Key: "a", Value: []any{capnweb.Object{{Key: "d", Value: "x"}, {Key: "c", Value: nil}}}},
	}
	want := capnweb.Object{
		{Key: "b", Value: 1.0},
		{Key: "a", Value: []any{capnweb.Object{{Key: "d", Value: "x"}, {Key: "c", Value: nil}}}},
	}
	got, err := capnweb.AwaitAs[any](ctx, a.Call(ctx, "echo", in))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("echo: got %#v, %v; want %#v", got, err, want)
	}
	plain, err := a.Call(ctx, "echo", in).Await(ctx)
	wantPlain := map[string]any{"b": 1.0, "a": []any{map[string]any{"d": "x", "c": nil}}}
	if err != nil || !reflect.DeepEqual(plain, wantPlain) {
		t.Errorf("echo with Await: got %#v, %v; want %#v", plain, err, wantPlain)
	}

	ids := a.Call(ctx, "getUserIds")
	defer ids.Dispose()
	mapped, err := capnweb.AwaitAs[[]capnweb.Object](ctx, ids.Map(ctx, func(id capnweb.MapRef) any {
		return capnweb.Object{{Key: "id", Value: id}, {Key: "hi", Value: id.Capture(a).Call("getUserName", id)}}
	}))
	wantMapped := []capnweb.Object{
		{{Key: "id", Value: 1.0}, {Key: "hi", Value: "alice"}},
		{{Key: "id", Value: 2.0}, {Key: "hi", Value: "bob"}},
		{{Key: "id", Value: 3.0}, {Key: "hi", Value: "carol"}},
	}
	if err != nil || !reflect.DeepEqual(mapped, wantMapped) {
		t.Errorf("map: got %#v, %v; want %#v", mapped, err, wantMapped)
	}

	// A struct is written in field order, like encoding/json does.
	user, err := capnweb.AwaitAs[capnweb.Object](ctx, a.Call(ctx, "getUser", 1))
	if err != nil || len(user) < 2 || user[0].Key != "id" {
		t.Errorf("getUser: got %#v, %v; want the fields of User in order", user, err)
	}
}
