package kernel

import (
	"fmt"
	"strings"
	"time"
)

// Text describes the dry run for people and models (the MCP tool's output, atelier exec):
// its id and expiry, then per gadget "+ key = new", "~ key: old -> new", "- key (was old)",
// then the would-be actions.
func (d *DryRunInfo) Text() string {
	var b strings.Builder
	if d.ID == "" {
		return "dry run: nothing would change\n"
	}
	fmt.Fprintf(&b, "dry run %s (commit or discard it before %s):\n", d.ID, d.Expires.UTC().Format(time.RFC3339))
	show := func(v *string) string {
		if v == nil {
			return "(absent)"
		}
		return *v
	}
	for _, g := range d.Gadgets {
		fmt.Fprintf(&b, "gadget %s:\n", g.Gadget)
		for _, c := range g.Added {
			fmt.Fprintf(&b, "  + %s = %s\n", c.Key, show(c.New))
		}
		for _, c := range g.Changed {
			fmt.Fprintf(&b, "  ~ %s: %s -> %s\n", c.Key, show(c.Old), show(c.New))
		}
		for _, c := range g.Removed {
			fmt.Fprintf(&b, "  - %s (was %s)\n", c.Key, show(c.Old))
		}
	}
	for _, a := range d.Actions {
		fmt.Fprintf(&b, "action of %s via %s.%s(%s): %s\n", a.Gatekeeper, a.Binding, a.Method, a.Args, a.Title)
	}
	return b.String()
}
