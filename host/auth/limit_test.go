package auth

import (
	"fmt"
	"testing"
	"time"
)

func TestLimiterBacksOffAndForgets(t *testing.T) {
	now := time.Unix(1e9, 0)
	l := NewLimiter(LimiterConfig{Free: 2, Base: time.Second, Max: 4 * time.Second, Window: time.Minute}, func() time.Time { return now })
	for range 2 {
		l.Fail("ada")
	}
	if w := l.Wait("ada"); w != 0 {
		t.Fatalf("within the free allowance: wait %v", w)
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		l.Fail("ada")
		if w := l.Wait("ada"); w != want {
			t.Fatalf("failure %d beyond the allowance: wait %v, want %v", i+1, w, want)
		}
	}
	if w := l.Wait("bob"); w != 0 {
		t.Fatalf("another key waits %v", w)
	}
	now = now.Add(3 * time.Second)
	if w := l.Wait("ada"); w != time.Second {
		t.Fatalf("after 3s: wait %v, want 1s", w)
	}
	now = now.Add(time.Minute)
	if w := l.Wait("ada"); w != 0 || l.Len() != 0 {
		t.Fatalf("after the window: wait %v, %d keys", w, l.Len())
	}
	for range 3 {
		l.Fail("ada")
	}
	l.Succeed("ada")
	if w := l.Wait("ada"); w != 0 {
		t.Fatalf("after a success: wait %v", w)
	}
}

func TestLimiterIsBounded(t *testing.T) {
	now := time.Unix(1e9, 0)
	l := NewLimiter(LimiterConfig{MaxKeys: 100}, func() time.Time { return now })
	for i := range 10_000 {
		l.Fail(fmt.Sprint("addr-", i))
	}
	if n := l.Len(); n > 100 {
		t.Fatalf("%d keys tracked, want at most 100", n)
	}
}
