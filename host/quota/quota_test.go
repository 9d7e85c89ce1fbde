package quota

import (
	"strings"
	"testing"
)

func TestParseAndFormat(t *testing.T) {
	mem, _ := Lookup("host_memory")
	runs, _ := Lookup("code_runs")
	for _, c := range []struct {
		q    Info
		in   string
		want int64
	}{
		{mem, "2GiB", 2 << 30}, {mem, "512 MiB", 512 << 20}, {mem, "100mb", 100e6}, {mem, "4096", 4096},
		{runs, "8", 8}, {runs, "unlimited", Unlimited}, {runs, "default", 0},
	} {
		got, err := c.q.Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("%s.Parse(%q) = %d, %v; want %d", c.q.Name, c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "x", "-5", "1.5GiB", "99999999999TiB"} {
		if _, err := mem.Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if _, err := runs.Parse("2GiB"); err == nil {
		t.Error("a count quota accepted a byte size")
	}
	if got := mem.Format(3 << 29); got != "1.5 GiB" {
		t.Errorf("Format = %q", got)
	}
}

func TestEffectiveAndError(t *testing.T) {
	l := Limits{CodeRuns: 2, Agents: Unlimited}
	e := l.Effective()
	if e.CodeRuns != 2 || e.Agents != Unlimited || e.Workspaces != Defaults.Workspaces {
		t.Fatalf("Effective = %+v", e)
	}
	for _, q := range Infos {
		if q.Get(Limits{}) <= 0 {
			t.Errorf("quota %s has no default", q.Name)
		}
	}
	if !Allows(Unlimited, 1e9, 1) || Allows(2, 2, 1) || !Allows(2, 1, 1) {
		t.Error("Allows")
	}
	msg := (&ExceededError{Quota: "code_runs", Limit: 4, Used: 4, Whose: "workspace home"}).Error()
	for _, want := range []string{"code_runs", "workspace home", "4 of 4", "atelier admin quota set code_runs"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
}
