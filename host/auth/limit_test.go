package auth

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestLimiterBacksOffAndForgets(t *testing.T) {
	now := time.Unix(1e9, 0)
	l := NewLimiter(LimiterConfig{Free: 2, Base: time.Second, Max: 4 * time.Second, Window: time.Minute}, func() time.Time { return now })
	l.Fail("ada")
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

func TestLimiterReservesBeforeTheOutcome(t *testing.T) {
	now := time.Unix(1e9, 0)
	l := NewLimiter(LimiterConfig{Free: 5}, func() time.Time { return now })
	ctx := context.Background()
	reserve := func() (int, time.Duration) {
		t.Helper()
		prior, wait, err := l.Reserve(ctx, "ada")
		if err != nil {
			t.Fatal(err)
		}
		return prior, wait
	}
	// Five attempts start; the sixth waits for their outcome and, as all five failed, is told
	// to wait.
	for range 5 {
		if prior, wait := reserve(); prior != 0 || wait != 0 {
			t.Fatalf("an attempt within the allowance: %d prior failures, wait %v", prior, wait)
		}
	}
	sixth := make(chan time.Duration)
	go func() {
		_, wait, _ := l.Reserve(ctx, "ada")
		sixth <- wait
	}()
	for range 5 {
		select {
		case w := <-sixth:
			t.Fatalf("the sixth attempt did not wait for the others (wait %v)", w)
		default:
		}
		l.Failed("ada")
	}
	if w := <-sixth; w != time.Second {
		t.Fatalf("after five failures the sixth attempt: wait %v, want 1s", w)
	}
	// Past the allowance, one attempt at a time.
	now = now.Add(time.Second)
	if prior, wait := reserve(); prior != 5 || wait != 0 {
		t.Fatalf("after the wait: %d prior failures, wait %v; want 5, 0", prior, wait)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, _, err := l.Reserve(short, "ada"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second attempt past the allowance did not wait: %v", err)
	}
	l.Cancel("ada") // an attempt the server could not check counts for nothing
	if prior, wait := reserve(); prior != 5 || wait != 0 {
		t.Fatalf("after a cancelled attempt: %d prior failures, wait %v", prior, wait)
	}
	// A success clears the key, also for the attempts waiting for it.
	go func() {
		_, wait, _ := l.Reserve(ctx, "ada")
		sixth <- wait
	}()
	l.Succeed("ada")
	if w := <-sixth; w != 0 {
		t.Fatalf("after a success: wait %v", w)
	}
	l.Cancel("ada")
	if n := l.Len(); n != 0 {
		t.Fatalf("without failures or attempts %d keys are left", n)
	}
}

func TestRateAllowsABurstThenOnePerInterval(t *testing.T) {
	now := time.Unix(1e9, 0)
	r := NewRate(RateConfig{Every: 10 * time.Minute, Burst: 3}, func() time.Time { return now })
	for i := range 3 {
		if w := r.Take("a"); w != 0 {
			t.Fatalf("action %d of the burst waits %v", i+1, w)
		}
	}
	if w := r.Take("a"); w != 10*time.Minute {
		t.Fatalf("past the burst: wait %v, want 10m", w)
	}
	if w := r.Take("b"); w != 0 {
		t.Fatalf("another key waits %v", w)
	}
	now = now.Add(4 * time.Minute)
	if w := r.Take("a"); w != 6*time.Minute {
		t.Fatalf("after 4m: wait %v, want 6m", w)
	}
	now = now.Add(6 * time.Minute)
	if w := r.Take("a"); w != 0 {
		t.Fatalf("after 10m: wait %v", w)
	}
	if w := r.Take("a"); w != 10*time.Minute {
		t.Fatalf("one action per interval: wait %v", w)
	}
	r.Refund("a")
	if w := r.Take("a"); w != 0 {
		t.Fatalf("after a refund: wait %v", w)
	}
	now = now.Add(time.Hour)
	for i := range 3 {
		if w := r.Take("a"); w != 0 {
			t.Fatalf("after an hour, action %d waits %v", i+1, w)
		}
	}
}

func TestRateIsBounded(t *testing.T) {
	r := NewRate(RateConfig{MaxKeys: 100}, nil)
	for i := range 10_000 {
		r.Take(fmt.Sprint("addr-", i))
	}
	if n := r.Len(); n > 100 {
		t.Fatalf("%d keys tracked, want at most 100", n)
	}
}
