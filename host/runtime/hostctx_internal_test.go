package runtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDeadlineCtx checks that the lazy deadline context behaves as context.WithDeadline does:
// its deadline, values, the parent's cancellation, the deadline passing (seen through Err
// alone, or through Done), and the end of the call.
func TestDeadlineCtx(t *testing.T) {
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "v")

	d := time.Now().Add(time.Hour)
	c, end := newDeadlineCtx(parent, d)
	if got, ok := c.Deadline(); !ok || !got.Equal(d) {
		t.Errorf("Deadline = %v, %v; want %v, true", got, ok, d)
	}
	if c.Value(key{}) != "v" {
		t.Errorf("Value = %v, want the parent's", c.Value(key{}))
	}
	if err := c.Err(); err != nil {
		t.Errorf("Err before the deadline = %v", err)
	}
	if c.inner != nil {
		t.Error("Err before the deadline made the timer context")
	}
	child, cancelChild := context.WithCancel(c) // asks for Done: the timer context is made
	defer cancelChild()
	end()
	<-child.Done() // ending the call reaches contexts made from it
	if !errors.Is(c.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
		t.Errorf("after end: Err = %v, child's %v; want Canceled", c.Err(), child.Err())
	}

	// Ended before anything asked for Done.
	c, end = newDeadlineCtx(parent, time.Now().Add(time.Hour))
	end()
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("Err after end = %v, want Canceled", c.Err())
	}
	<-c.Done()

	// The deadline passed, seen through Err first: Done is closed too.
	c, end = newDeadlineCtx(parent, time.Now().Add(-time.Millisecond))
	defer end()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("Err after the deadline = %v, want DeadlineExceeded", c.Err())
	}
	<-c.Done()

	// The deadline passes while something waits on Done.
	c, end = newDeadlineCtx(parent, time.Now().Add(20*time.Millisecond))
	defer end()
	<-c.Done()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("Err once Done closed = %v, want DeadlineExceeded", c.Err())
	}

	// The parent ends.
	p, cancelParent := context.WithCancel(parent)
	c, end = newDeadlineCtx(p, time.Now().Add(time.Hour))
	defer end()
	cancelParent()
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("Err after the parent ended = %v, want Canceled", c.Err())
	}
	<-c.Done()
}
