package jsruntime

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type oneMethod struct{ calls int }

func (b *oneMethod) Methods() []string { return []string{"get"} }
func (b *oneMethod) Call(context.Context, string, []any) (any, error) {
	b.calls++
	return "ok", nil
}

// The bindings.Caller an executeCode instance gets resolves only its env, and refuses
// everything once the call has ended, whoever still holds it.
func TestScopeRevocation(t *testing.T) {
	b := &oneMethod{}
	sc := newScope(Env{Bindings: map[string]Binding{"mine": b}})
	ctx := context.Background()
	if v, err := sc.CallBinding(ctx, "mine", "get", nil); err != nil || v != "ok" {
		t.Fatalf("live call: %v, %v", v, err)
	}
	if _, err := sc.CallBinding(ctx, "theirs", "get", nil); err == nil || !strings.Contains(err.Error(), `no binding named "theirs"`) {
		t.Fatalf("another binding: %v", err)
	}
	if _, err := sc.CallBinding(ctx, "mine", "set", nil); err == nil || !strings.Contains(err.Error(), `no method "set"`) {
		t.Fatalf("another method: %v", err)
	}
	sc.revoke()
	_, err := sc.CallBinding(ctx, "mine", "get", nil)
	if !errors.Is(err, ErrRevoked) || !strings.Contains(err.Error(), "has ended") {
		t.Fatalf("after revocation: %v", err)
	}
	if b.calls != 1 {
		t.Fatalf("the binding ran %d times, want 1", b.calls)
	}
}
