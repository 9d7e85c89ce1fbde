package smaps

import "testing"

// TestClassify sorts a hand-made map of a process: a plain memory (guard, read-write part,
// reservation), an imaged one (guard, image, read-write part, reservation), and look-alikes
// that are not linear memory (an anonymous mapping before a small PROT_NONE region, one after
// a reservation's end, a named one).
func TestClassify(t *testing.T) {
	const g = 1 << 30
	vmas := []vma{
		{start: 0, end: 0x1000, perms: "---p", dirty: 0},
		{start: 0x1000, end: 0x11000, perms: "rw-p", dirty: 8},        // linear
		{start: 0x11000, end: 0x11000 + 4*g, perms: "---p", dirty: 0}, // reservation
		{start: 0x11000 + 4*g, end: 0x12000 + 4*g, perms: "rw-p", dirty: 100},
		{start: 0x20000 + 4*g, end: 0x21000 + 4*g, perms: "---p"},
		{start: 0x21000 + 4*g, end: 0x31000 + 4*g, perms: "rw-p", name: imageName + " (deleted)", dirty: 16},
		{start: 0x31000 + 4*g, end: 0x41000 + 4*g, perms: "rw-p", dirty: 32}, // linear
		{start: 0x41000 + 4*g, end: 0x41000 + 8*g, perms: "---p"},
		{start: 0x50000 + 8*g, end: 0x51000 + 8*g, perms: "---p"},
		{start: 0x51000 + 8*g, end: 0x52000 + 8*g, perms: "rw-p", dirty: 1000}, // before a small guard
		{start: 0x52000 + 8*g, end: 0x53000 + 8*g, perms: "---p"},
		{start: 0x60000 + 8*g, end: 0x61000 + 8*g, perms: "rw-p", name: "[heap]", dirty: 10000, pss: 10001},
	}
	got := classify(vmas)
	want := Dirty{Image: 16, Linear: 40, Other: 11100, Pss: 10001}
	if got != want {
		t.Fatalf("classify = %v, want %v", got, want)
	}
	if got.Total() != 11156 || got.Sub(Dirty{Image: 6, Linear: 10, Other: 100, Pss: 1}) != (Dirty{Image: 10, Linear: 30, Other: 11000, Pss: 10000}) {
		t.Fatalf("Total or Sub wrong for %v", got)
	}
}

// TestSelf reads this process: it has dirty memory (its Go heap at least), all of it in its
// Pss, and no linear memory or image.
func TestSelf(t *testing.T) {
	d, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if d.Other <= 0 || d.Image != 0 || d.Linear != 0 || d.Pss < d.Other {
		t.Fatalf("Self() = %v, want other memory only, within its Pss", d)
	}
}
