package extism

import (
	"context"
	"slices"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// guestKey carries the *Guest of a call in its context, for the listener.
type guestKey struct{}

// callListener watches the plugin functions (and the WASI reactor's _initialize): Before
// records the plugin module's memory, which neither Extism nor wazero hands out otherwise
// (Guest.Memory reads it), and whether the function returned or aborted tells the guest's
// own errors from traps. It is one shared value, so that compiled code stays cacheable.
type callListener struct{}

func (callListener) Before(ctx context.Context, mod api.Module, _ api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
	if g, ok := ctx.Value(guestKey{}).(*Guest); ok {
		g.mem, g.returned = mod.Memory(), false
	}
}

func (callListener) After(ctx context.Context, _ api.Module, _ api.FunctionDefinition, _ []uint64) {
	if g, ok := ctx.Value(guestKey{}).(*Guest); ok {
		g.returned = true
	}
}

func (callListener) Abort(context.Context, api.Module, api.FunctionDefinition, error) {}

// listenerFactory puts callListener on the plugin functions (HookExports too) and _initialize.
type listenerFactory struct{}

func (listenerFactory) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	for _, name := range def.ExportNames() {
		isExport := func(fn string) bool { return exportName(fn) == name }
		if name == "_initialize" || slices.ContainsFunc(Exports, isExport) || slices.ContainsFunc(HookExports, isExport) {
			return callListener{}
		}
	}
	return nil
}

// withMemoryListener returns ctx for compiling plugins with the listener.
func withMemoryListener(ctx context.Context) context.Context {
	return experimental.WithFunctionListenerFactory(ctx, listenerFactory{})
}
