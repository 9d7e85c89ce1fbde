package kernel

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"atelier/host/gatekeeper"
	"atelier/host/store"
)

// Gatekeeper packages are server-wide: the admin installs and removes them (they reach
// outside services), every user lists them and connects accounts (accounts.go). An installed
// package is kept in the store under its digest and compiled again after a restart, on first
// use.

// gatekeepers caches the compiled packages by ID.
type gatekeepers struct {
	mu  sync.Mutex
	gks map[string]*gatekeeper.Gatekeeper
	// builtins are the gatekeepers that run in the host (the MCP gatekeeper), by ID: always
	// available, never installed or removed (builtin.go).
	builtins map[string]*gatekeeper.Gatekeeper
}

// GatekeeperInfo describes an installed gatekeeper package.
type GatekeeperInfo struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Vendor  string `json:"vendor"`
	Format  string `json:"format"`
	Size    int    `json:"size"`
	// Credentials are the secrets connectAccount wants, by name.
	Credentials []GatekeeperCredential `json:"credentials"`
	// Resources are the kinds of resource an account can be granted, with their URL patterns.
	Resources      []gatekeeper.ResourcePattern `json:"resources"`
	AutoApprovable []string                     `json:"autoApprovable"`
	// Session is the session API Code Mode snippets call (null: the gatekeeper serves gadget
	// bindings only).
	Session   *gatekeeper.SessionAPI `json:"session"`
	Installed time.Time              `json:"installed"`
	// OAuth is true when accounts connect by OAuth (the manifest declares oauth); then
	// OAuthClient says whether the admin configured the client (setOAuthClient).
	OAuth       bool `json:"oauth,omitempty"`
	OAuthClient bool `json:"oauthClient,omitempty"`
}

// GatekeeperCredential names one credential of a package.
type GatekeeperCredential struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Optional credentials may be left out of connectAccount.
	Optional bool `json:"optional,omitempty"`
}

func gatekeeperInfo(rec store.GatekeeperRecord) (GatekeeperInfo, error) {
	var m gatekeeper.Manifest
	if err := json.Unmarshal(rec.Manifest, &m); err != nil {
		return GatekeeperInfo{}, fmt.Errorf("gatekeeper %s: corrupt manifest: %w", rec.ID, err)
	}
	info := GatekeeperInfo{ID: rec.ID, Name: rec.Name, Version: rec.Version, Vendor: rec.Vendor, Format: rec.Format, Size: rec.Size,
		Credentials: []GatekeeperCredential{}, Resources: m.Resources, AutoApprovable: m.AutoApprovable, Session: m.Session, Installed: rec.Created}
	info.OAuth, info.OAuthClient = m.OAuth != nil, rec.OAuthClient != nil
	for _, c := range m.Credentials {
		info.Credentials = append(info.Credentials, GatekeeperCredential{Name: c.Name, Description: c.Description, Optional: c.Optional})
	}
	if info.AutoApprovable == nil {
		info.AutoApprovable = []string{}
	}
	return info, nil
}

// packageErrors are the errors of a refused package (INVALID_ARGUMENT).
var packageErrors = []error{
	gatekeeper.ErrBadArchive, gatekeeper.ErrTooLarge, gatekeeper.ErrBadManifest, gatekeeper.ErrHashMismatch,
	gatekeeper.ErrNotComponent, gatekeeper.ErrNotPlugin, gatekeeper.ErrWorldMismatch, gatekeeper.ErrExcessImports,
}

// packageErr classifies an error of opening or installing a package.
func packageErr(err error, what string) error {
	for _, pe := range packageErrors {
		if errors.Is(err, pe) {
			return &Error{Code: CodeInvalidArgument, Msg: what + ": " + err.Error(), Err: err}
		}
	}
	return wrapErr(err, "%s", what)
}

// installPackage compiles p with the installer of its format.
func (k *Kernel) installPackage(ctx context.Context, p *gatekeeper.Package) (*gatekeeper.Gatekeeper, error) {
	switch f := p.Manifest.PackageFormat(); f {
	case gatekeeper.FormatComponent:
		if k.cfg.GatekeeperRuntime == nil {
			return nil, fail(CodeFailedPrecondition, "this server runs no gatekeeper components")
		}
		return gatekeeper.Install(ctx, k.cfg.GatekeeperRuntime, p)
	case gatekeeper.FormatExtism:
		if k.cfg.Extism == nil {
			return nil, fail(CodeFailedPrecondition, "this server runs no Extism gatekeepers")
		}
		return k.cfg.Extism.Install(ctx, p)
	default:
		return nil, fmt.Errorf("%w: unknown package format %q", gatekeeper.ErrBadManifest, f)
	}
}

// gatekeeper returns installed package id, compiling it from the store on first use.
func (k *Kernel) gatekeeper(ctx context.Context, id string) (*gatekeeper.Gatekeeper, error) {
	if gk := k.gks.builtins[id]; gk != nil {
		return gk, nil
	}
	k.gks.mu.Lock()
	defer k.gks.mu.Unlock()
	if gk := k.gks.gks[id]; gk != nil {
		return gk, nil
	}
	_, archive, err := k.st.Gatekeeper(ctx, id)
	if err != nil {
		return nil, wrapErr(err, "gatekeeper %s", id)
	}
	p, err := gatekeeper.Open(archive)
	if err != nil {
		return nil, wrapErr(err, "open stored gatekeeper %s", id)
	}
	gk, err := k.installPackage(ctx, p)
	if err != nil {
		return nil, wrapErr(err, "install stored gatekeeper %s", id)
	}
	k.gks.gks[id] = gk
	return gk, nil
}

// closeGatekeepers releases every compiled package and the built-in gatekeepers (whose
// cached connections and stdio server processes would otherwise outlive the kernel).
func (k *Kernel) closeGatekeepers() {
	k.gks.mu.Lock()
	defer k.gks.mu.Unlock()
	for id, gk := range k.gks.gks {
		gk.Close()
		delete(k.gks.gks, id)
	}
	for _, gk := range k.gks.builtins {
		gk.Close()
	}
}

// adminOnly refuses everyone but the admin user.
func (a *Authed) adminOnly(what string) error {
	if err := a.userOnly(what); err != nil {
		return err
	}
	if !a.p.admin() {
		return fail(CodeForbidden, "%s: only the server's admin may do this", what)
	}
	return nil
}

// InstallGatekeeper installs a gatekeeper package (a tar archive, docs/gatekeepers.md) for
// the whole server (admin only). A refused package fails with INVALID_ARGUMENT and the
// package error's message; a package installed already with CONFLICT.
func (a *Authed) InstallGatekeeper(ctx context.Context, archive []byte) (GatekeeperInfo, error) {
	if err := a.adminOnly("installGatekeeper"); err != nil {
		return GatekeeperInfo{}, err
	}
	p, err := gatekeeper.Open(archive)
	if err != nil {
		return GatekeeperInfo{}, packageErr(err, "install gatekeeper")
	}
	k := a.k
	k.gks.mu.Lock()
	defer k.gks.mu.Unlock()
	if k.gks.gks[p.Digest] != nil {
		return GatekeeperInfo{}, fail(CodeConflict, "install gatekeeper: %s is installed already", p)
	}
	gk, err := k.installPackage(ctx, p)
	if err != nil {
		return GatekeeperInfo{}, packageErr(err, "install gatekeeper")
	}
	manifest, err := json.Marshal(p.Manifest)
	if err != nil {
		gk.Close()
		return GatekeeperInfo{}, wrapErr(err, "install gatekeeper")
	}
	rec := store.GatekeeperRecord{ID: p.Digest, Name: p.Manifest.Name, Version: p.Manifest.Version, Vendor: p.Manifest.Vendor,
		Format: p.Manifest.PackageFormat(), Size: len(archive), Manifest: manifest, By: a.p.userID, Created: time.Now().UTC()}
	if err := k.st.PutGatekeeper(ctx, rec, archive); err != nil {
		gk.Close()
		if errors.Is(err, store.ErrConflict) {
			return GatekeeperInfo{}, fail(CodeConflict, "install gatekeeper: %s is installed already", p)
		}
		return GatekeeperInfo{}, wrapErr(err, "install gatekeeper")
	}
	k.gks.gks[p.Digest] = gk
	return gatekeeperInfo(rec)
}

// boolInt is 1 for true.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ListGatekeepers lists the installed gatekeeper packages, then the built-in gatekeepers
// (format "builtin": the MCP gatekeeper, always available).
func (a *Authed) ListGatekeepers(ctx context.Context) ([]GatekeeperInfo, error) {
	if err := a.p.check(); err != nil {
		return nil, err
	}
	if err := a.k.recordBuiltins(ctx); err != nil {
		return nil, wrapErr(err, "list gatekeepers")
	}
	recs, err := a.k.st.Gatekeepers(ctx)
	if err != nil {
		return nil, wrapErr(err, "list gatekeepers")
	}
	out := make([]GatekeeperInfo, 0, len(recs))
	for _, rec := range recs {
		info, err := gatekeeperInfo(rec)
		if err != nil {
			return nil, wrapErr(err, "list gatekeepers")
		}
		out = append(out, info)
	}
	// The installed packages first, then the built-in gatekeepers.
	slices.SortStableFunc(out, func(a, b GatekeeperInfo) int {
		return cmp.Compare(boolInt(a.Format == gatekeeper.FormatBuiltin), boolInt(b.Format == gatekeeper.FormatBuiltin))
	})
	return out, nil
}

// RemoveGatekeeper uninstalls a gatekeeper package (admin only) and disconnects every
// account connected to it.
func (a *Authed) RemoveGatekeeper(ctx context.Context, id string) error {
	if err := a.adminOnly("removeGatekeeper"); err != nil {
		return err
	}
	if a.k.gks.builtins[id] != nil {
		return fail(CodeFailedPrecondition, "remove gatekeeper: %s is built into the server; it cannot be removed", id)
	}
	k := a.k
	k.gks.mu.Lock()
	defer k.gks.mu.Unlock()
	if err := k.st.DeleteGatekeeper(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fail(CodeNotFound, "remove gatekeeper: no gatekeeper %q is installed", id)
		}
		return wrapErr(err, "remove gatekeeper")
	}
	if gk := k.gks.gks[id]; gk != nil {
		gk.Close()
		delete(k.gks.gks, id)
	}
	return nil
}
