package capnweb

import (
	"sync"
	"time"
)

// Handlers run on pooled goroutines: starting a fresh goroutine for every call would make each
// call pay for growing a new stack through the reflection machinery. A worker that finishes
// parks on its own channel; the pool hands work to the worker that parked last, whose stack and
// caches are warmest. Parking arms no timer (a timer per call would also wake the network
// poller to re-arm its timeout): while workers are idle, a janitor goroutine wakes once per
// workerIdle and retires those idle for longer.

const (
	maxIdleWorkers = 1024
	workerIdle     = time.Second
)

// idleWorker is a parked worker goroutine.
type idleWorker struct {
	work  chan func() // nil tells the worker to exit
	since time.Time
}

var workers struct {
	mu      sync.Mutex
	idle    []*idleWorker // in the order they parked
	janitor bool          // janitorLoop is running
}

// goWork runs f on a pooled goroutine.
func goWork(f func()) {
	workers.mu.Lock()
	n := len(workers.idle)
	if n == 0 {
		workers.mu.Unlock()
		go workerLoop(f)
		return
	}
	w := workers.idle[n-1]
	workers.idle[n-1] = nil
	workers.idle = workers.idle[:n-1]
	workers.mu.Unlock()
	w.work <- f
}

func workerLoop(f func()) {
	w := &idleWorker{work: make(chan func(), 1)}
	for f != nil {
		f()
		workers.mu.Lock()
		if len(workers.idle) >= maxIdleWorkers {
			workers.mu.Unlock()
			return
		}
		w.since = time.Now()
		workers.idle = append(workers.idle, w)
		if !workers.janitor {
			workers.janitor = true
			go janitorLoop()
		}
		workers.mu.Unlock()
		f = <-w.work
	}
}

// janitorLoop retires workers idle for longer than workerIdle, and ends when none is idle.
func janitorLoop() {
	for {
		time.Sleep(workerIdle)
		workers.mu.Lock()
		cutoff := time.Now().Add(-workerIdle)
		n := 0
		for n < len(workers.idle) && !workers.idle[n].since.After(cutoff) {
			workers.idle[n].work <- nil // buffered: never blocks
			n++
		}
		rest := copy(workers.idle, workers.idle[n:])
		clear(workers.idle[rest:])
		workers.idle = workers.idle[:rest]
		if rest == 0 {
			workers.janitor = false
			workers.mu.Unlock()
			return
		}
		workers.mu.Unlock()
	}
}
