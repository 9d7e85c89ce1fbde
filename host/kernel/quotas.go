package kernel

import (
	"context"
	"strings"
	"sync"
	"time"

	"atelier/host/quota"
)

// Quotas (docs/security.md, "Quotas"). The quotas in force are Config.Quotas with the admin's
// changes (store.Store.Quotas) laid over them, kept in k.quotas: loaded on first use, and
// loaded again when they change, by setQuota on this node or, in a cluster, when the replica
// applies another node's change (NoteQuotas, wired to the cluster store's OnQuotas). So a
// check never reads the store for them, and a change holds from the next check on.
//
// The user quotas are counted from the store (UserUsage, the user's own records) under a lock
// of the user's (users), held while the thing is created: creates of one user on one node are
// counted one at a time and cannot overshoot. Stored bytes also grow with every gadget kv
// write, too often to read the store: each user's bytes are kept in memory, read from the
// store at most every storedRefresh (which corrects for deletions and, in a cluster, for
// writes of the user's workspaces that other nodes run), and changed by every kv write and code
// upload this node makes.

// storedRefresh is how long a user's stored bytes are counted in memory before the store's
// tally replaces them.
const storedRefresh = 10 * time.Second

// users holds the per-user state of the user quotas: a user's entry lives while one of its
// charges runs, and after while its stored bytes are fresh (loaded within storedRefresh); a
// stale entry nobody holds is dropped, so the map keeps only the users active of late.
type users struct {
	mu      sync.Mutex
	m       map[string]*userState
	sweepAt int // len(m) at which lockUser next drops the stale entries nobody holds
}

// userState is one user's: held while one of its creates is counted and made, and while its
// stored bytes are read or changed.
type userState struct {
	refs   int // lockUser calls not yet unlocked (users.mu)
	mu     sync.Mutex
	stored int64     // bytes stored: the store's tally at loaded plus this node's changes since
	loaded time.Time // zero: stored must be read from the store again
}

// stale reports whether stored must be read from the store again; with u.mu held, or with
// users.mu held and u.refs zero.
func (u *userState) stale() bool { return time.Since(u.loaded) > storedRefresh }

// lockUser returns the state of user id, locked; unlockUser ends it.
func (k *Kernel) lockUser(id string) *userState {
	us := &k.users
	us.mu.Lock()
	u := us.m[id]
	if u == nil {
		if us.m == nil {
			us.m = map[string]*userState{}
		}
		if len(us.m) >= us.sweepAt {
			for id, u := range us.m {
				if u.refs == 0 && u.stale() {
					delete(us.m, id)
				}
			}
			us.sweepAt = max(64, 2*len(us.m))
		}
		u = &userState{}
		us.m[id] = u
	}
	u.refs++
	us.mu.Unlock()
	u.mu.Lock()
	return u
}

// unlockUser unlocks the state u of user id, dropping it when it is stale and nobody else
// holds it.
func (k *Kernel) unlockUser(id string, u *userState) {
	u.mu.Unlock()
	us := &k.users
	us.mu.Lock()
	if u.refs--; u.refs == 0 && u.stale() {
		delete(us.m, id)
	}
	us.mu.Unlock()
}

// limits returns the quotas in force, every field set (quota.Limits.Effective).
func (k *Kernel) limits() quota.Limits {
	if l := k.quotas.Load(); l != nil {
		return *l
	}
	if err := k.loadQuotas(context.Background()); err != nil {
		k.log.Error("the admin's quotas could not be read; the configured ones hold", "err", err)
		return k.cfg.Quotas.Effective()
	}
	return *k.quotas.Load()
}

// loadQuotas puts the admin's quotas, read from the store, in force over Config.Quotas.
func (k *Kernel) loadQuotas(ctx context.Context) error {
	k.quotaMu.Lock()
	defer k.quotaMu.Unlock()
	set, err := k.st.Quotas(ctx)
	if err != nil {
		return wrapErr(err, "read the quotas")
	}
	l := k.cfg.Quotas
	for _, q := range quota.Infos {
		if v := q.Raw(set); v != 0 {
			q.Set(&l, v)
		}
	}
	l = l.Effective()
	k.quotas.Store(&l)
	return nil
}

// NoteQuotas tells the kernel that the admin's quotas changed elsewhere (another node of the
// cluster), so that it reads them again.
func (k *Kernel) NoteQuotas() {
	if err := k.loadQuotas(context.Background()); err != nil {
		k.log.Error("the changed quotas could not be read; the previous ones hold", "err", err)
	}
}

// exceeded is the refusal by quota q, whose value is limit, of user id, who uses used.
func (k *Kernel) exceeded(ctx context.Context, q quota.Info, limit, used int64, id string) error {
	return &quota.ExceededError{Quota: q.Name, Limit: limit, Used: used, Whose: "user " + k.username(ctx, id)}
}

// charge runs create, which adds more (a tally in the user quotas' fields) to what user owns,
// once the user quotas allow it, while no other charge of user's runs on this node. It refuses
// with a *quota.ExceededError naming the first quota that more would pass. Call it outside
// the workspace loop or on it, never while waiting for a loop.
func (k *Kernel) charge(ctx context.Context, user string, more quota.Limits, create func() error) error {
	u := k.lockUser(user)
	defer k.unlockUser(user, u)
	used, err := k.st.UserUsage(ctx, user)
	if err != nil {
		return wrapErr(err, "count what the user owns")
	}
	u.refreshed(used.StoredBytes)
	used.StoredBytes = u.stored
	lim := k.limits()
	for _, q := range quota.Infos {
		if n := q.Raw(more); q.Scope == quota.User && n > 0 && !quota.Allows(q.Get(lim), q.Raw(used), n) {
			return k.exceeded(ctx, q, q.Get(lim), q.Raw(used), user)
		}
	}
	if err := create(); err != nil {
		return err
	}
	u.stored += more.StoredBytes
	return nil
}

// refreshed sets the stored bytes to the store's tally n; with u.mu held.
func (u *userState) refreshed(n int64) {
	u.stored, u.loaded = n, time.Now()
}

// addStored adds n bytes (a kv write, a deploy's code) to what user stores, refusing a growth
// past the stored_bytes quota with a *quota.ExceededError.
func (k *Kernel) addStored(ctx context.Context, user string, n int64) error {
	u := k.lockUser(user)
	defer k.unlockUser(user, u)
	if u.stale() {
		used, err := k.st.UserUsage(ctx, user)
		if err != nil {
			return wrapErr(err, "count the bytes the user stores")
		}
		u.refreshed(used.StoredBytes)
	}
	q, _ := quota.Lookup("stored_bytes")
	if limit := q.Get(k.limits()); !quota.Allows(limit, u.stored, n) {
		return k.exceeded(ctx, q, limit, u.stored, user)
	}
	u.stored += n
	return nil
}

// freeStored takes n bytes (freed, or given back by a trapped call) off what user stores.
func (k *Kernel) freeStored(user string, n int64) {
	if n == 0 {
		return
	}
	u := k.lockUser(user)
	u.stored -= n
	k.unlockUser(user, u)
}

// forgetStored makes the next count of user's stored bytes read the store (after deletions).
func (k *Kernel) forgetStored(user string) {
	u := k.lockUser(user)
	u.loaded = time.Time{}
	k.unlockUser(user, u)
}

// QuotaInfo describes one quota to the admin (getQuotas).
type QuotaInfo struct {
	Name  string      `json:"name"`
	Scope quota.Scope `json:"scope"`
	// Value is the quota in force, Default the value without the admin's change (-1:
	// unlimited).
	Value   int64  `json:"value"`
	Default int64  `json:"default"`
	Unit    string `json:"unit"` // "bytes" or "count"
	About   string `json:"about"`
}

// unit names what a quota's values count.
func unit(q quota.Info) string {
	if q.Bytes {
		return "bytes"
	}
	return "count"
}

// GetQuotas lists every quota with its value in force and its default (admin only).
func (a *Authed) GetQuotas() ([]QuotaInfo, error) {
	if err := a.adminOnly("getQuotas"); err != nil {
		return nil, err
	}
	lim, def := a.k.limits(), a.k.cfg.Quotas.Effective()
	out := make([]QuotaInfo, len(quota.Infos))
	for i, q := range quota.Infos {
		out[i] = QuotaInfo{Name: q.Name, Scope: q.Scope, Value: q.Get(lim), Default: q.Get(def), Unit: unit(q), About: q.About}
	}
	return out, nil
}

// SetQuota changes quota name for the whole server at once (admin only): value is a positive
// number, -1 for unlimited, or null to restore the default. The data file keeps the change.
func (a *Authed) SetQuota(ctx context.Context, name string, value *int64) error {
	if err := a.adminOnly("setQuota"); err != nil {
		return err
	}
	q, ok := quota.Lookup(name)
	if !ok {
		return fail(CodeInvalidArgument, "set quota: no quota %q; the quotas are %s", name, strings.Join(quota.Names(), ", "))
	}
	v := int64(0)
	if value != nil {
		v = *value
		if v == 0 || v < quota.Unlimited {
			return fail(CodeInvalidArgument, "set quota %s: %d is not a value: give a positive number, -1 for unlimited, or null for the default", name, v)
		}
	}
	k := a.k
	k.quotaMu.Lock()
	set, err := k.st.Quotas(ctx)
	if err == nil {
		q.Set(&set, v)
		err = k.st.PutQuotas(ctx, set)
	}
	k.quotaMu.Unlock()
	if err != nil {
		return wrapErr(err, "set quota %s", name)
	}
	if err := k.loadQuotas(ctx); err != nil {
		return err
	}
	k.log.Info("quota changed", "quota", name, "value", q.Format(q.Get(k.limits())))
	return nil
}

// userQuotaUsage returns user's use of each user quota against its limit.
func (k *Kernel) userQuotaUsage(ctx context.Context, user string) ([]QuotaUsage, error) {
	used, err := k.st.UserUsage(ctx, user)
	if err != nil {
		return nil, wrapErr(err, "count what the user owns")
	}
	lim := k.limits()
	var out []QuotaUsage
	for _, q := range quota.Infos {
		if q.Scope == quota.User {
			out = append(out, QuotaUsage{Name: q.Name, Scope: q.Scope, Used: q.Raw(used), Limit: q.Get(lim)})
		}
	}
	return out, nil
}
