package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"atelier/host/gatekeeper"
	"atelier/host/gatekeeper/mcpgk"
	"atelier/host/store"
)

// Built-in gatekeepers run in the host instead of from an installed package: the MCP
// gatekeeper (host/gatekeeper/mcpgk, Config.MCP). They are always available; a record of
// each is written to the store when first listed or connected (accounts refer to their
// gatekeeper's record), and they cannot be removed.

// builtinGatekeepers starts the built-in gatekeepers of the kernel's configuration. One whose
// configuration is refused is left out, with an error logged.
func (k *Kernel) builtinGatekeepers() map[string]*gatekeeper.Gatekeeper {
	out := map[string]*gatekeeper.Gatekeeper{}
	cfg := k.cfg.MCP
	if cfg.Version == "" {
		cfg.Version = k.cfg.Version
	}
	gk, err := mcpgk.New(cfg)
	if err != nil {
		k.log.Error("the MCP gatekeeper is not available", "err", err)
		return out
	}
	out[mcpgk.ID] = gk
	return out
}

// recordBuiltins writes the store record of each built-in gatekeeper that has none yet.
func (k *Kernel) recordBuiltins(ctx context.Context) error {
	for id, gk := range k.gks.builtins {
		if _, _, err := k.st.Gatekeeper(ctx, id); err == nil {
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		m := gk.Package.Manifest
		manifest, err := json.Marshal(m)
		if err != nil {
			return err
		}
		rec := store.GatekeeperRecord{ID: id, Name: m.Name, Version: m.Version, Vendor: m.Vendor, Format: m.Format, Manifest: manifest, By: "atelier", Created: time.Now().UTC()}
		if err := k.st.PutGatekeeper(ctx, rec, []byte{}); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return nil
}

// sessionMethods returns the session methods of an instance of gk (whose guest lists them,
// gatekeeper.Gatekeeper.DynamicSession) for acct, from a short-lived instance that records
// nothing.
func (k *Kernel) sessionMethods(ctx context.Context, gk *gatekeeper.Gatekeeper, acct store.GatekeeperAccount) ([]string, error) {
	creds, err := k.openCredentials(acct)
	if err != nil {
		return nil, err
	}
	inst, err := gk.Start(ctx, gatekeeper.Account{Name: acct.ID, Resource: acct.Resource, Credentials: creds, Queue: gatekeeper.NewMemoryQueue(), Limits: k.cfg.Limits})
	if err != nil {
		return nil, err
	}
	defer inst.Close()
	return inst.SessionMethods(ctx)
}
