package gatekeeper_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"atelier/host/gatekeeper"
	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

// TestResponseTooLarge has the probe fetch a 600 kB body (within the outbound HTTP bound) for an
// instance whose responses may be 256 KiB: the probe's response to the host, which carries the
// body, is refused with a *wit.SizeError before the host builds it. A body past the outbound
// bound is not read past it (TestEgress, "response too large").
func TestResponseTooLarge(t *testing.T) {
	svc, _, in, _, _, _ := probeSetup(t)
	ctx := context.Background()
	small, err := in.Gatekeeper().Start(ctx, gatekeeper.Account{
		Name: "probe-small", Resource: svc.Origin + "/notebooks/work", Credentials: map[string]string{"token": aliceToken},
		Queue: gatekeeper.NewMemoryQueue(), Limits: runtime.Limits{Timeout: 10 * time.Second, MaxResult: 256 << 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	s, err := small.OpenSession(ctx, "agent:small")
	if err != nil {
		t.Fatal(err)
	}
	work := svc.Origin + "/api/notebooks/work"
	if f, _, err := fetch(s, "GET", work+"/big?bytes=100000", nil, ""); err != nil || len(f.Body) != 100000 {
		t.Fatalf("a 100 kB body: %d bytes, %v", len(f.Body), err)
	}
	_, _, err = fetch(s, "GET", work+"/big?bytes=600000", nil, "")
	var se *wit.SizeError
	if !errors.As(err, &se) || se.Limit != 256<<10 || se.Size < 256<<10 || !strings.Contains(err.Error(), "over the limit of 256 KiB") {
		t.Fatalf("a 600 kB body: %v; want a *wit.SizeError over 256 KiB", err)
	}
}
