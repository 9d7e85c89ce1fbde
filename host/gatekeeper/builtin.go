package gatekeeper

import (
	"context"
	"errors"
	"slices"
)

// FormatBuiltin is the format of a gatekeeper that runs in the host itself rather than from a
// package (the MCP gatekeeper, host/gatekeeper/mcpgk). No archive has it: Open refuses it.
const FormatBuiltin = "builtin"

// ErrUnavailable marks a call that failed because the service behind the gatekeeper could not
// be reached or went away during the call (the kernel answers UNAVAILABLE). A later call may
// succeed.
var ErrUnavailable = errors.New("service unavailable")

// Builtin describes a gatekeeper that runs in the host: its manifest (Format FormatBuiltin,
// with resource patterns left empty when Grant decides), its code and how it grants resources.
type Builtin struct {
	// Manifest describes the gatekeeper as a package's manifest would. AutoApprovable may
	// hold "*": every kind the gatekeeper submits may then get an auto-approval rule.
	Manifest Manifest
	// ID is the gatekeeper's identity, in place of a package digest ("builtin:mcp").
	ID     string
	Vendor Vendor
	Kinds  []ResourceKind
	Code   Code
	// Grant decides which resource URLs an account may be granted (in place of the
	// manifest's patterns).
	Grant func(resource string) (*Grant, error)
}

// NewBuiltin returns the Gatekeeper of b.
func NewBuiltin(b Builtin) *Gatekeeper {
	b.Manifest.Format = FormatBuiltin
	return &Gatekeeper{Package: &Package{Manifest: b.Manifest, Digest: b.ID}, Vendor: b.Vendor, Kinds: b.Kinds, code: b.Code, grant: b.Grant}
}

// GrantFor returns what an account on resource is granted, or why resource cannot be granted.
func (g *Gatekeeper) GrantFor(resource string) (*Grant, error) {
	if g.grant != nil {
		return g.grant(resource)
	}
	return g.Package.Manifest.GrantFor(resource)
}

// Builtin reports whether g runs in the host rather than from a package.
func (g *Gatekeeper) Builtin() bool { return g.Package.Manifest.Format == FormatBuiltin }

// AutoApproves reports whether user rules may auto-approve actions of kind: the manifest lists
// it, or the manifest of a built-in gatekeeper lists "*" (which covers every kind but "*").
func (m *Manifest) AutoApproves(kind string) bool {
	return slices.Contains(m.AutoApprovable, kind) || m.Format == FormatBuiltin && kind != "" && kind != "*" && slices.Contains(m.AutoApprovable, "*")
}

// MethodLister is implemented by a Guest whose session methods depend on the service it
// reaches (an MCP server's tools) rather than on the manifest's session API.
type MethodLister interface {
	SessionMethods(ctx context.Context) ([]string, error)
}

// SessionMethods returns the methods a session of in serves: the guest's own list when it
// has one (MethodLister), else the manifest's session API (nil without one).
func (in *Instance) SessionMethods(ctx context.Context) ([]string, error) {
	if ml, ok := in.guest.(MethodLister); ok {
		ms, err := ml.SessionMethods(ctx)
		if err != nil {
			return nil, in.fail("session methods", err)
		}
		return ms, nil
	}
	if s := in.g.Package.Manifest.Session; s != nil {
		return s.Methods, nil
	}
	return nil, nil
}

// DynamicSession reports whether the session methods of g's instances come from the guest
// (MethodLister) rather than from the manifest: true for built-in gatekeepers.
func (g *Gatekeeper) DynamicSession() bool { return g.Builtin() }
