//go:build wasip1

// Command todo-go is the to-do list gadget (wit/todo.wit) written in Go. It has the same
// exports, kv layout and events as todo-js, so either can be deployed over the other's state:
// "next-id" holds the next id (decimal text), "todo/<id, 10 digits>" holds one item as JSON,
// and every change is published on the topic "todos" as {"kind", "todo"}.
// Build it with `sdk/build-gadget.sh gadgets/todo-go OUT.wasm`.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	_ "atelier/sdk/go/benchexports" // noop, echo, roundtrip: the benchmark exports
	"atelier/sdk/go/cabi"
	"atelier/sdk/go/host"
)

const (
	nextIDKey = "next-id"
	prefix    = "todo/"
	maxItems  = 10000
	topic     = "todos"
)

// todo is one item; its JSON form is the one todo-js stores and publishes.
type todo struct {
	ID    uint32 `json:"id"`
	Title string `json:"title"`
	Done  bool   `json:"done"`
}

func main() {}

func key(id uint32) string { return fmt.Sprintf("%s%010d", prefix, id) }

// must traps the instance on a host error: the host drops it and keeps the state as committed.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// marshal encodes v like JavaScript's JSON.stringify (no HTML escaping, no trailing newline).
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	must(enc.Encode(v))
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func load(id uint32) (todo, bool) {
	v, ok, err := host.Get(key(id))
	must(err)
	var t todo
	if ok {
		must(json.Unmarshal(v, &t))
	}
	return t, ok
}

func changed(kind string, t todo) {
	must(host.Publish(topic, string(marshal(struct {
		Kind string `json:"kind"`
		Todo todo   `json:"todo"`
	}{kind, t}))))
	host.Log(host.Info, fmt.Sprintf("%s %d: %s", kind, t.ID, t.Title))
}

// lowerTodo stores t at ptr in the canonical ABI layout of `record todo`: id@0, title@4, done@12.
func lowerTodo(ptr uint32, t todo) {
	cabi.Store32(ptr, t.ID)
	p, n := cabi.LowerString(t.Title)
	cabi.Store32(ptr+4, p)
	cabi.Store32(ptr+8, n)
	if t.Done {
		cabi.Store8(ptr+12, 1)
	}
}

// todoSize is the size of `record todo` in the canonical ABI.
const todoSize = 16

//go:wasmexport add
func add(titlePtr, titleLen uint32) uint32 {
	title := cabi.TakeString(titlePtr, titleLen)
	id := uint32(1)
	if v, ok, err := host.Get(nextIDKey); err != nil {
		panic(err)
	} else if ok {
		n, err := strconv.ParseUint(string(v), 10, 32)
		must(err)
		id = uint32(n)
	}
	t := todo{ID: id, Title: title}
	must(host.Batch([]host.Op{
		{Key: nextIDKey, Value: []byte(strconv.FormatUint(uint64(id)+1, 10))},
		{Key: key(id), Value: marshal(t)},
	}))
	changed("added", t)
	ret := cabi.Results(todoSize)
	lowerTodo(ret, t)
	return ret
}

//go:wasmexport list
func list() uint32 {
	entries, err := host.List(prefix, maxItems)
	must(err)
	items := make([]todo, len(entries))
	for i, e := range entries {
		must(json.Unmarshal(e.Value, &items[i]))
	}
	ret := cabi.Results(8)
	p := cabi.LowerList(uint32(len(items)), todoSize)
	for i, t := range items {
		lowerTodo(p+uint32(i)*todoSize, t)
	}
	cabi.Store32(ret, p)
	cabi.Store32(ret+4, uint32(len(items)))
	return ret
}

// toggle returns a result<todo, string>: tag@0, then the todo or the error string @4.
//
//go:wasmexport toggle
func toggle(id uint32) uint32 {
	ret := cabi.Results(4 + todoSize)
	t, ok := load(id)
	if !ok {
		cabi.Store8(ret, 1)
		p, n := cabi.LowerString(fmt.Sprintf("no todo with id %d", id))
		cabi.Store32(ret+4, p)
		cabi.Store32(ret+8, n)
		return ret
	}
	t.Done = !t.Done
	must(host.Set(key(id), marshal(t)))
	changed("toggled", t)
	lowerTodo(ret+4, t)
	return ret
}

//go:wasmexport remove
func remove(id uint32) uint32 {
	t, ok := load(id)
	if !ok {
		return 0
	}
	must(host.Delete(key(id)))
	changed("removed", t)
	return 1
}
