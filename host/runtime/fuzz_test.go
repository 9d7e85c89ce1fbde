package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

// FuzzEcho feeds random JSON values through the echo component, as the argument of the echo
// function picked by sel. Conversion errors are fine; a trap, a panic, or a value that comes
// back different from what the conversion alone produces is a failure.
// Seeds: testdata/fuzz/FuzzEcho.
func FuzzEcho(f *testing.F) {
	fx := newFixture(f, runtime.Config{})
	types := make(map[string]*wit.FuncType)
	for _, it := range fx.echo.Audit().Exports {
		if it.Kind == wit.ItemFunc {
			types[it.Name] = it.Func
		}
	}
	inst := fx.instance(f, runtime.InstanceConfig{})
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		fn := "echo-" + echoTypes[int(sel)%len(echoTypes)]
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		ft := types[fn]
		var c wit.Flat
		if wit.Lower(ft.Params[0].Type, v, "args[0]", &c) != nil {
			return // not a value of this type
		}
		want, err := wit.Lift(ft.Result, &c, "result")
		if err != nil {
			t.Fatalf("Lift(Lower(%s)) failed: %v", data, err)
		}
		got, err := inst.Call(context.Background(), fn, v)
		var rerr *runtime.ResultError
		switch {
		case errors.As(err, &rerr):
			got = map[string]any{"err": rerr.Value}
		case err != nil:
			t.Fatalf("%s(%s): %v", fn, data, err)
		case ft.Result.Kind == wit.Result:
			got = map[string]any{"ok": got}
		}
		if !sameValue(got, want) {
			t.Fatalf("%s(%s) = %#v, want %#v", fn, data, got, want)
		}
	})
}
