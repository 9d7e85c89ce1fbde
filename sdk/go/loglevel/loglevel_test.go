package loglevel

import "testing"

func TestLevels(t *testing.T) {
	for l, name := range map[Level]string{Debug: "debug", Info: "info", Warn: "warn", Error: "error", 4: "error", 1 << 31: "error"} {
		if l.String() != name {
			t.Errorf("Level(%d).String() = %q, want %q", l, l.String(), name)
		}
	}
	if Level(7).Clamp() != Error || Warn.Clamp() != Warn {
		t.Errorf("Clamp: 7 -> %d, Warn -> %d", Level(7).Clamp(), Warn.Clamp())
	}
}
