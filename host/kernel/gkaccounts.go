package kernel

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"atelier/host/gatekeeper"
	"atelier/host/gatekeeper/vault"
	"atelier/host/quota"
	"atelier/host/store"
)

// vaultKey loads the vault key of Config.KeyFile once.
type vaultKey struct {
	once sync.Once
	box  *vault.Box
	err  error
}

// box returns the vault that seals gatekeeper credentials.
func (k *Kernel) box() (*vault.Box, error) {
	k.vault.once.Do(func() {
		if k.cfg.KeyFile == "" {
			k.vault.err = fail(CodeFailedPrecondition, "this server has no key file for gatekeeper credentials")
			return
		}
		k.vault.box, k.vault.err = vault.LoadKey(k.cfg.KeyFile)
	})
	return k.vault.box, k.vault.err
}

// sealContext binds a sealed credential to its account and name.
func sealContext(accountID, credential string) string {
	return "credential/" + accountID + "/" + credential
}

// openCredentials decrypts an account's credentials, to build a gatekeeper.Account.
func (k *Kernel) openCredentials(acct store.GatekeeperAccount) (map[string]string, error) {
	box, err := k.box()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(acct.Sealed))
	for name, sealed := range acct.Sealed {
		plain, err := box.Open(sealed, sealContext(acct.ID, name))
		if err != nil {
			return nil, wrapErr(err, "account %s: credential %s", acct.ID, name)
		}
		out[name] = string(plain)
	}
	return out, nil
}

// AccountInfo describes a connected account; credentials are never returned.
type AccountInfo struct {
	ID         string    `json:"id,omitempty"` // empty for a pending OAuth authorization
	Gatekeeper string    `json:"gatekeeper"`
	Name       string    `json:"name"` // the gatekeeper's name
	Resource   string    `json:"resource"`
	Kind       string    `json:"kind"`
	Created    time.Time `json:"created,omitzero"`
	// State is "" for a usable account, or "reconnect" for an OAuth account whose provider no
	// longer accepts its tokens (connect it again).
	State string `json:"state,omitempty"`
	// OAuth is true for an account connected by OAuth.
	OAuth bool `json:"oauth,omitempty"`
	// AuthorizationURL and Pending are set instead of ID when connectAccount starts an OAuth
	// authorization: send the user to AuthorizationURL; the account appears in listAccounts
	// once the provider sends them back to the server.
	AuthorizationURL string `json:"authorizationUrl,omitempty"`
	Pending          string `json:"pending,omitempty"`
}

// ConnectAccount connects the caller's account on gatekeeperId (users only): resource is
// the URL of the resource granted (it must match one of the manifest's patterns) and
// credentials has exactly the manifest's credential names. The credentials are stored sealed
// and never returned by any call. For a gatekeeper whose manifest declares oauth,
// credentials must be empty and the result has only AuthorizationURL and Pending: the
// account is created when the provider sends the user back (CompleteOAuth); when the caller
// has an account on that resource in the "reconnect" state, that account is reconnected.
func (a *Authed) ConnectAccount(ctx context.Context, gatekeeperID, resource string, credentials map[string]string) (AccountInfo, error) {
	if err := a.userOnly("connectAccount"); err != nil {
		return AccountInfo{}, err
	}
	k := a.k
	gk, err := k.gatekeeper(ctx, gatekeeperID)
	if err != nil {
		return AccountInfo{}, wrapErr(err, "connect account")
	}
	m := gk.Package.Manifest
	grant, err := gk.GrantFor(resource)
	if err != nil {
		return AccountInfo{}, &Error{Code: CodeInvalidArgument, Msg: "connect account: " + err.Error(), Err: err}
	}
	if m.OAuth != nil {
		if len(credentials) > 0 {
			return AccountInfo{}, fail(CodeInvalidArgument, "connect account: %s connects by OAuth and takes no credentials", m.Name)
		}
		rec, _, err := k.st.Gatekeeper(ctx, gatekeeperID)
		if err != nil {
			return AccountInfo{}, wrapErr(err, "connect account")
		}
		reconnect := ""
		if accts, err := k.st.Accounts(ctx, a.p.userID); err == nil {
			for _, acct := range accts {
				if acct.Gatekeeper == gatekeeperID && acct.Resource == resource && acct.State == store.AccountReconnect {
					reconnect = acct.ID
				}
			}
		}
		info, err := a.startOAuth(ctx, rec, &m, resource, reconnect)
		info.Kind = grant.Kind
		return info, err
	}
	var want []string
	for _, c := range m.Credentials {
		want = append(want, c.Name)
		if credentials[c.Name] == "" && !c.Optional {
			return AccountInfo{}, fail(CodeInvalidArgument, "connect account: credential %q (%s) is missing", c.Name, c.Description)
		}
	}
	for name := range credentials {
		if !slices.Contains(want, name) {
			return AccountInfo{}, fail(CodeInvalidArgument, "connect account: %s takes no credential %.40q (it takes %v)", m.Name, name, want)
		}
	}
	box, err := k.box()
	if err != nil {
		return AccountInfo{}, wrapErr(err, "connect account")
	}
	acct := store.GatekeeperAccount{ID: store.NewID("acct"), Owner: a.p.userID, Gatekeeper: gatekeeperID, Resource: resource,
		Sealed: map[string][]byte{}, Created: time.Now().UTC()}
	if err := k.recordBuiltins(ctx); err != nil {
		return AccountInfo{}, wrapErr(err, "connect account")
	}
	for name, secret := range credentials {
		if secret == "" {
			continue // an optional credential left out
		}
		acct.Sealed[name] = box.Seal([]byte(secret), sealContext(acct.ID, name))
	}
	if err := k.charge(ctx, a.p.userID, quota.Limits{Accounts: 1}, func() error { return k.st.PutAccount(ctx, acct) }); err != nil {
		return AccountInfo{}, wrapErr(err, "connect account")
	}
	return AccountInfo{ID: acct.ID, Gatekeeper: gatekeeperID, Name: m.Name, Resource: resource, Kind: grant.Kind, Created: acct.Created}, nil
}

// ListAccounts lists the caller's connected accounts (users only).
func (a *Authed) ListAccounts(ctx context.Context) ([]AccountInfo, error) {
	if err := a.userOnly("listAccounts"); err != nil {
		return nil, err
	}
	accts, err := a.k.st.Accounts(ctx, a.p.userID)
	if err != nil {
		return nil, wrapErr(err, "list accounts")
	}
	out := make([]AccountInfo, 0, len(accts))
	for _, acct := range accts {
		out = append(out, a.k.accountInfo(ctx, acct))
	}
	return out, nil
}

// accountInfo describes acct with its gatekeeper's name and the kind of its resource (both
// blank when the gatekeeper was removed).
func (k *Kernel) accountInfo(ctx context.Context, acct store.GatekeeperAccount) AccountInfo {
	_, oauth := acct.Sealed[oauthSealName]
	info := AccountInfo{ID: acct.ID, Gatekeeper: acct.Gatekeeper, Resource: acct.Resource, Created: acct.Created, State: acct.State, OAuth: oauth}
	if rec, _, err := k.st.Gatekeeper(ctx, acct.Gatekeeper); err == nil {
		info.Name = rec.Name
		if gk := k.gks.builtins[acct.Gatekeeper]; gk != nil {
			if g, err := gk.GrantFor(acct.Resource); err == nil {
				info.Kind = g.Kind
			}
		} else if m, err := gatekeeper.ParseManifest(rec.Manifest); err == nil {
			if g, err := m.GrantFor(acct.Resource); err == nil {
				info.Kind = g.Kind
			}
		}
	}
	return info
}

// userAccount returns gatekeeper account id and whether user userID owns it (false too when
// it cannot be read).
func (k *Kernel) userAccount(ctx context.Context, userID, id string) (store.GatekeeperAccount, bool) {
	acct, err := k.st.Account(ctx, id)
	return acct, err == nil && acct.Owner == userID
}

// DisconnectAccount removes one of the caller's accounts with its sealed credentials (an
// OAuth account's tokens).
func (a *Authed) DisconnectAccount(ctx context.Context, id string) error {
	if err := a.userOnly("disconnectAccount"); err != nil {
		return err
	}
	acct, ok := a.k.userAccount(ctx, a.p.userID, id)
	if !ok {
		return fail(CodeNotFound, "disconnect account: you have no account %q", id)
	}
	a.k.dropAccountHooks(ctx, id, a.p.name())
	if err := a.k.st.DeleteAccount(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return wrapErr(err, "disconnect account")
	}
	if gk, err := a.k.gatekeeper(ctx, acct.Gatekeeper); err == nil {
		gk.CloseAccount(id) // its connections and watches end now, not when they next idle out
	}
	return nil
}
