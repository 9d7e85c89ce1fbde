package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"atelier/host/runtime"
)

// byteSizes are the list<u8> sizes the byte tests and benchmarks use.
var byteSizes = []int{1 << 10, 64 << 10, 1 << 20}

// pattern returns n bytes counting up from start, mod 256.
func pattern(n, start int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(start + i)
	}
	return b
}

// TestBytesLarge sends large byte lists in every direction: as the argument and the result of
// an export, and as the argument and the result of a host function.
func TestBytesLarge(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	inst := f.instance(t, runtime.InstanceConfig{})
	ctx := context.Background()
	for _, n := range append([]int{0, 1}, byteSizes...) {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			in := pattern(n, 7)
			got, err := inst.Call(ctx, "echo-bytes", in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.([]byte), in) {
				t.Fatalf("echo-bytes: %d bytes came back different", n)
			}
			if seen := f.host.seen("echo-bytes").([]byte); !bytes.Equal(seen, in) {
				t.Fatalf("the host saw %d different bytes", n)
			}
			if got, err := inst.Call(ctx, "bytes-len", in); err != nil || got != uint32(n) {
				t.Fatalf("bytes-len = %v, %v; want %d", got, err, n)
			}
			got, err = inst.Call(ctx, "bytes-make", n)
			if err != nil {
				t.Fatal(err)
			}
			// bytes-make fills its buffer with the low byte of each address; the buffer starts
			// where the guest's heap does (1024, a multiple of 256).
			if b := got.([]byte); !bytes.Equal(b, pattern(n, 0)) {
				t.Fatalf("bytes-make(%d) returned different bytes", n)
			}
			if got, err := inst.Call(ctx, "bytes-via-host", n); err != nil || got != uint32(n) {
				t.Fatalf("bytes-via-host = %v, %v; want %d", got, err, n)
			}
		})
	}
}

// BenchmarkBytes moves list<u8> values of each size in each direction: "arg" (host to guest,
// the argument of an export), "result" (guest to host, its result) and "host" (guest to host
// and back, the argument and result of a host function called by the guest).
func BenchmarkBytes(b *testing.B) {
	f := newFixture(b, runtime.Config{})
	inst := f.instance(b, runtime.InstanceConfig{})
	ctx := context.Background()
	for _, n := range byteSizes {
		in := pattern(n, 0)
		ops := []struct {
			name, fn string
			arg      any
		}{{"arg", "bytes-len", in}, {"result", "bytes-make", n}, {"host", "bytes-via-host", n}}
		for _, op := range ops {
			b.Run(fmt.Sprintf("%s/%dKiB", op.name, n>>10), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(n))
				for b.Loop() {
					if _, err := inst.Call(ctx, op.fn, op.arg); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
