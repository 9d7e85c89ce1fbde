// Package smaps reads how much private dirty memory (RAM no other process or mapping shares:
// what a live instance really costs) a process running Atelier's runtime holds, from
// /proc/PID/smaps, split by what the mappings are, and its proportional set size. Benchmarks
// compare two readings taken around making some instances (Dirty.Sub). Linux only.
package smaps

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Dirty is a process's Private_Dirty memory in KiB, by kind of mapping, and its Pss.
type Dirty struct {
	// Image is the pages of the memory creator's copy-on-write data images (mappings of its
	// "atelier-memory-image" memfds) that instances wrote to.
	Image int64
	// Linear is the rest of the linear memories: anonymous read-write mappings that start at
	// a linear memory's guard or image and end at its PROT_NONE reservation.
	Linear int64
	// Other is everything else: the C heap (Wasmtime's stores, instances and tables), the Go
	// heap, thread stacks.
	Other int64
	// Pss is the proportional set size of all mappings in KiB: resident pages, each counted
	// as its share among the mappings of it. Unlike VmRSS, which counts a page of an image
	// once per instance that maps it, a page shared by 30 instances counts once in all.
	Pss int64
}

// Total returns all the private dirty memory in KiB (Pss aside).
func (d Dirty) Total() int64 { return d.Image + d.Linear + d.Other }

// Sub returns d less e, kind by kind.
func (d Dirty) Sub(e Dirty) Dirty {
	return Dirty{Image: d.Image - e.Image, Linear: d.Linear - e.Linear, Other: d.Other - e.Other, Pss: d.Pss - e.Pss}
}

// String renders d as "image 12 KiB, linear 34 KiB, other 56 KiB, pss 78 KiB".
func (d Dirty) String() string {
	return fmt.Sprintf("image %d KiB, linear %d KiB, other %d KiB, pss %d KiB", d.Image, d.Linear, d.Other, d.Pss)
}

// imageName is how the memory creator's memfds appear in smaps (memory.c, atl_image_begin).
const imageName = "/memfd:atelier-memory-image"

// reservation is the least size of the PROT_NONE rest of a linear memory's reservation that
// follows its read-write part (the runtime reserves 4 GiB for a 32-bit memory).
const reservation = 1 << 30

type vma struct {
	start, end  uint64
	perms, name string
	dirty, pss  int64
}

// Self reads the calling process's private dirty memory.
func Self() (Dirty, error) { return read("/proc/self/smaps") }

// Of reads process pid's private dirty memory.
func Of(pid int) (Dirty, error) { return read(fmt.Sprintf("/proc/%d/smaps", pid)) }

func read(path string) (Dirty, error) {
	f, err := os.Open(path)
	if err != nil {
		return Dirty{}, fmt.Errorf("read private dirty memory: %w", err)
	}
	defer f.Close()
	var vmas []vma
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			s, err1 := strconv.ParseUint(lo, 16, 64)
			e, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 != nil || err2 != nil {
				return Dirty{}, fmt.Errorf("read %s: bad mapping line %q", path, sc.Text())
			}
			v := vma{start: s, end: e, perms: fields[1]}
			if len(fields) > 5 {
				v.name = strings.Join(fields[5:], " ")
			}
			vmas = append(vmas, v)
			continue
		}
		if (fields[0] == "Private_Dirty:" || fields[0] == "Pss:") && len(vmas) > 0 {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return Dirty{}, fmt.Errorf("read %s: bad %s %q", path, fields[0], sc.Text())
			}
			if v := &vmas[len(vmas)-1]; fields[0] == "Pss:" {
				v.pss = kb
			} else {
				v.dirty = kb
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Dirty{}, fmt.Errorf("read %s: %w", path, err)
	}
	return classify(vmas), nil
}

// classify sums the mappings' private dirty memory by kind.
func classify(vmas []vma) Dirty {
	var d Dirty
	for i, v := range vmas {
		d.Pss += v.pss
		switch {
		case strings.HasPrefix(v.name, imageName):
			d.Image += v.dirty
		case v.name == "" && v.perms == "rw-p" && i > 0 && i+1 < len(vmas) && linearAt(vmas[i-1], v, vmas[i+1]):
			d.Linear += v.dirty
		default:
			d.Other += v.dirty
		}
	}
	return d
}

// linearAt reports whether the anonymous read-write mapping v, between prev and next, is the
// read-write part of a linear memory: right after its leading guard (PROT_NONE) or its image,
// and right before the PROT_NONE rest of its reservation.
func linearAt(prev, v, next vma) bool {
	after := prev.end == v.start && (prev.perms == "---p" || strings.HasPrefix(prev.name, imageName))
	before := next.start == v.end && next.perms == "---p" && next.end-next.start >= reservation
	return after && before
}
