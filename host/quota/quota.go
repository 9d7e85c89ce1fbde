// Package quota holds the limits on what one user, one workspace and the whole host may
// consume (docs/security.md, "Quotas"): their names, defaults and units, and the error a
// refusal carries. The kernel enforces them; an admin changes them at run time (API and
// `atelier admin quota`), and the data file keeps the changes.
package quota

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Scope says whose consumption a quota bounds.
type Scope string

// The scopes of quotas.
const (
	// User quotas bound what one user owns, summed over their workspaces.
	User Scope = "user"
	// Workspace quotas bound one workspace's live use.
	Workspace Scope = "workspace"
	// Host quotas bound the whole server.
	Host Scope = "host"
)

// Limits are every quota's value. A zero or negative field means its default (Defaults); the
// value Unlimited turns a quota off.
type Limits struct {
	// Per user.
	Workspaces  int64 `json:"workspaces,omitempty"`   // workspaces the user owns
	Gadgets     int64 `json:"gadgets,omitempty"`      // gadgets in the user's workspaces
	Accounts    int64 `json:"accounts,omitempty"`     // gatekeeper accounts the user connected
	Agents      int64 `json:"agents,omitempty"`       // agents the user made
	Models      int64 `json:"models,omitempty"`       // models the user added for the agent
	Schedules   int64 `json:"schedules,omitempty"`    // schedules in the user's workspaces
	StoredBytes int64 `json:"stored_bytes,omitempty"` // kv state, code and archives the user stores

	// Per workspace.
	LiveInstances   int64 `json:"live_instances,omitempty"`   // gadget instances alive at once
	WorkspaceMemory int64 `json:"workspace_memory,omitempty"` // guest memory of its live instances, bytes
	CodeRuns        int64 `json:"code_runs,omitempty"`        // Code Mode snippets running at once
	CallsPerSecond  int64 `json:"calls_per_second,omitempty"` // gadget calls per second (burst: one second's worth)

	// Host-wide.
	HostMemory int64 `json:"host_memory,omitempty"` // guest memory of all live instances, bytes
}

// Unlimited is the value that turns a quota off.
const Unlimited int64 = -1

// Defaults are the values a single-machine deployment can live with: generous for one team,
// tight enough that no one user or workspace can take the machine's memory.
var Defaults = Limits{
	Workspaces:  50,
	Gadgets:     200,
	Accounts:    50,
	Agents:      50,
	Models:      32,
	Schedules:   100,
	StoredBytes: 1 << 30,

	LiveInstances:   32,
	WorkspaceMemory: 2 << 30,
	CodeRuns:        4,
	CallsPerSecond:  5000,

	HostMemory: 8 << 30,
}

// Info describes one quota.
type Info struct {
	Name  string // as the API and CLI spell it ("live_instances")
	Scope Scope
	Bytes bool   // the value is a byte count
	About string // one line for help texts
	field func(*Limits) *int64
}

// Infos lists every quota, user ones first.
var Infos = []Info{
	{"workspaces", User, false, "workspaces a user owns", func(l *Limits) *int64 { return &l.Workspaces }},
	{"gadgets", User, false, "gadgets in a user's workspaces", func(l *Limits) *int64 { return &l.Gadgets }},
	{"accounts", User, false, "gatekeeper accounts a user connected", func(l *Limits) *int64 { return &l.Accounts }},
	{"agents", User, false, "agents a user made", func(l *Limits) *int64 { return &l.Agents }},
	{"models", User, false, "models a user added for the agent", func(l *Limits) *int64 { return &l.Models }},
	{"schedules", User, false, "schedules in a user's workspaces", func(l *Limits) *int64 { return &l.Schedules }},
	{"stored_bytes", User, true, "bytes a user stores (gadget state, code, archives)", func(l *Limits) *int64 { return &l.StoredBytes }},
	{"live_instances", Workspace, false, "gadget instances a workspace keeps alive at once", func(l *Limits) *int64 { return &l.LiveInstances }},
	{"workspace_memory", Workspace, true, "guest memory of a workspace's live instances", func(l *Limits) *int64 { return &l.WorkspaceMemory }},
	{"code_runs", Workspace, false, "Code Mode snippets a workspace runs at once", func(l *Limits) *int64 { return &l.CodeRuns }},
	{"calls_per_second", Workspace, false, "gadget calls a workspace makes per second", func(l *Limits) *int64 { return &l.CallsPerSecond }},
	{"host_memory", Host, true, "guest memory of all live instances on this server", func(l *Limits) *int64 { return &l.HostMemory }},
}

// Lookup returns the quota named name.
func Lookup(name string) (Info, bool) {
	i := slices.IndexFunc(Infos, func(q Info) bool { return q.Name == name })
	if i < 0 {
		return Info{}, false
	}
	return Infos[i], true
}

// Names lists every quota's name, in the order of Infos.
func Names() []string {
	names := make([]string, len(Infos))
	for i, q := range Infos {
		names[i] = q.Name
	}
	return names
}

// Get returns the quota's value in l, its default when unset.
func (q Info) Get(l Limits) int64 {
	if v := *q.field(&l); v != 0 {
		return v
	}
	return *q.field(&Defaults)
}

// Raw returns the quota's field in l as it is (0: unset), with no default: for Limits that
// tally what is in use (store.Store.UserUsage) or what an operation adds.
func (q Info) Raw(l Limits) int64 { return *q.field(&l) }

// Set sets the quota's value in l (0 restores the default, Unlimited turns it off).
func (q Info) Set(l *Limits, v int64) { *q.field(l) = v }

// Effective returns l with every unset field at its default.
func (l Limits) Effective() Limits {
	out := l
	for _, q := range Infos {
		q.Set(&out, q.Get(l))
	}
	return out
}

// Allows reports whether using `used+more` stays within limit (Unlimited allows anything).
func Allows(limit, used, more int64) bool {
	return limit < 0 || used+more <= limit
}

// Format renders a value of the quota for people ("2 GiB", "50", "unlimited").
func (q Info) Format(v int64) string {
	switch {
	case v < 0:
		return "unlimited"
	case q.Bytes:
		return FormatBytes(v)
	default:
		return strconv.FormatInt(v, 10)
	}
}

// Parse reads a value of the quota: a count, a byte size with a unit (512MiB, 2GiB, 100MB)
// when the quota counts bytes, "unlimited", or "default" (0).
func (q Info) Parse(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch s {
	case "unlimited", "-1":
		return Unlimited, nil
	case "default":
		return 0, nil
	}
	mult := int64(1)
	if q.Bytes {
		for _, u := range []struct {
			suffix string
			mult   int64
		}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"b", 1}} {
			if strings.HasSuffix(s, u.suffix) {
				s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
				break
			}
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		unit := ""
		if q.Bytes {
			unit = " or a size such as 512MiB"
		}
		return 0, fmt.Errorf("quota %s: %q is not a number%s, \"unlimited\" or \"default\"", q.Name, s, unit)
	}
	return n * mult, nil
}

// FormatBytes renders n bytes in binary units ("1.5 GiB", "300 B").
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	s := strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " " + string("KMGTP"[exp]) + "iB"
}

// ExceededError is a refusal by a quota. The kernel reports it with code RESOURCE_EXHAUSTED.
type ExceededError struct {
	Quota string // its Info.Name
	Limit int64  // its value
	Used  int64  // what is in use (or would be, for memory and rates)
	// Whose: "user ada", "workspace home", "this server".
	Whose string
}

// Error names the quota, its value and who can raise it.
func (e *ExceededError) Error() string {
	q, _ := Lookup(e.Quota)
	return fmt.Sprintf("quota %s exceeded: %s has %s of %s (%s); the server's admin can raise it with `atelier admin quota set %s VALUE`",
		e.Quota, e.Whose, q.Format(e.Used), q.Format(e.Limit), q.About, e.Quota)
}
