package runtime

import (
	"bytes"
	"fmt"
	"strings"

	"atelier/sdk/wit/witdecode"
)

// Description is what `atelier inspect` and a gadget's inspect() show of a component: one line
// per import and export (interface members one by one), and the component's own WIT.
type Description struct {
	// Imports and Exports are the lines without their `import `/`export ` word:
	// `atelier:host/kv@0.1.0.get: func(key: string) -> result<option<list<u8>>, error>`. An
	// internal export (see Internal) ends with `(internal: why)`.
	Imports []string `json:"imports"`
	Exports []string `json:"exports"`
	// WIT is the component's WIT (see witdecode); "" when src is WAT text.
	WIT string `json:"wit"`
}

// Lines returns the lines with their `import `/`export ` word, imports first.
func (d Description) Lines() []string {
	out := make([]string, 0, len(d.Imports)+len(d.Exports))
	for _, l := range d.Imports {
		out = append(out, "import "+l)
	}
	for _, l := range d.Exports {
		out = append(out, "export "+l)
	}
	return out
}

// Describe describes the component c was compiled from src. The names come from src's own
// type sections (witdecode), so every type is written under its own name. For WAT text, and
// when witdecode cannot read the binary (the error says why), the lines are the audit's
// (Audit.Lines), whose structural types lose the names of records, variants and resources.
func (c *Component) Describe(src []byte) (Description, error) {
	var d Description
	audit := c.Audit()
	if !bytes.HasPrefix(src, []byte("\x00asm")) {
		return auditDescription(audit), nil
	}
	res, err := witdecode.Decode(src)
	if err != nil {
		return auditDescription(audit), fmt.Errorf("read the component's WIT: %w", err)
	}
	internal := map[string]string{}
	for _, it := range audit.Exports {
		if why := Internal(it); why != "" {
			internal[it.Name] = why
		}
	}
	for _, l := range res.Lines {
		if !l.Export {
			d.Imports = append(d.Imports, l.String())
			continue
		}
		s := l.String()
		if why := internal[l.Name]; why != "" && l.Interface == "" {
			s += " (internal: " + why + ")"
		}
		d.Exports = append(d.Exports, s)
	}
	d.WIT = res.WIT()
	return d, nil
}

func auditDescription(a *Audit) Description {
	var d Description
	for _, l := range a.Lines() {
		if rest, ok := strings.CutPrefix(l, "import "); ok {
			d.Imports = append(d.Imports, rest)
		} else if rest, ok := strings.CutPrefix(l, "export "); ok {
			d.Exports = append(d.Exports, rest)
		}
	}
	return d
}
