package events_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"atelier/host/capability/events"
	"atelier/host/capability/internal/testguest"
	"atelier/host/runtime"
)

func TestPublish(t *testing.T) {
	bus := events.NewBus()
	var mu sync.Mutex
	var got []events.Event
	cancel := bus.Subscribe(func(ev events.Event) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev)
	})
	defer cancel()
	inst := testguest.Start(t, runtime.InstanceConfig{Name: "gadget-1", Bind: map[string]any{events.Grant: bus}},
		events.New(nil, events.Limits{MaxTopic: 8, MaxPayload: 32}))
	ctx := context.Background()
	if _, err := inst.Call(ctx, "events-publish", "tick", `{"n": 1}`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ topic, payload, want string }{
		{"tick", `{"n": `, "not valid JSON"},
		{"tick", `"` + strings.Repeat("x", 40) + `"`, "exceeds 32"},
		{"", `1`, "topic must be"},
		{"much-too-long", `1`, "topic must be"},
	} {
		_, err := inst.Call(ctx, "events-publish", tc.topic, tc.payload)
		var re *runtime.ResultError
		if !errors.As(err, &re) || !strings.Contains(re.Value.(string), tc.want) {
			t.Errorf("publish(%q, %q): got %v, want an error containing %q", tc.topic, tc.payload, err, tc.want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].Source != "gadget-1" || got[0].Topic != "tick" || string(got[0].Payload) != `{"n": 1}` {
		t.Fatalf("subscriber got %+v", got)
	}
}

func TestDefaultPublisherAndCancel(t *testing.T) {
	bus := events.NewBus()
	n := 0
	cancel := bus.Subscribe(func(events.Event) { n++ })
	inst := testguest.Start(t, runtime.InstanceConfig{}, events.New(bus, events.Limits{}))
	if _, err := inst.Call(context.Background(), "events-publish", "t", "[]"); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := inst.Call(context.Background(), "events-publish", "t", "[]"); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("subscriber called %d times, want 1 (before cancel only)", n)
	}
}
