//go:build wasip1

// Command host-api is a test guest that calls every function of atelier/sdk/go/host and reports
// the results, so that tests/runtime checks the hand-written canonical ABI of each one.
package main

import (
	"fmt"
	"strings"

	"atelier/sdk/go/cabi"
	"atelier/sdk/go/host"
)

func main() {}

//go:wasmexport exercise
func exercise() uint32 {
	var out []string
	report := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	report("batch: %v", host.Batch([]host.Op{
		{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}, {Key: "c", Value: []byte{}},
		{Key: "d/ü", Value: []byte("4")}, {Delete: true, Key: "b"},
	}))
	entries, err := host.List("", 10)
	var listed []string
	for _, e := range entries {
		listed = append(listed, fmt.Sprintf("%s=%q", e.Key, e.Value))
	}
	report("list: [%s] %v", strings.Join(listed, " "), err)
	entries, err = host.List("d/", 10)
	report("list d/: %d %v", len(entries), err)
	v, ok, err := host.Get("a")
	report("get a: %q %v %v", v, ok, err)
	v, ok, err = host.Get("missing")
	report("get missing: %q %v %v", v, ok, err)
	report("set empty key: %v", host.Set("", []byte("x")))
	report("delete a: %v", host.Delete("a"))
	report("publish: %v", host.Publish("topic", `{"x":1}`))
	report("publish bad json: %v", host.Publish("topic", "not json"))
	report("now-ms > 2020: %v", host.NowMs() > 1577836800000)
	host.Log(host.Warn, "exercised")
	return cabi.ReturnString(strings.Join(out, "\n"))
}
