package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"

	"atelier/host/runtime/wit/tsdecl"
)

// checkCode checks stored-form code against grants and returns the code's hash: a component
// is compiled and its imports must be covered by grants; a JS bundle must load (checkBundle).
// A passed check is remembered per (code hash, grants), so creating gadgets from code the
// server has already checked (a blueprint, a redeploy) neither compiles nor loads it again.
func (k *Kernel) checkCode(ctx context.Context, code []byte, grants []string) (string, error) {
	if len(code) == 0 || len(code) > k.cfg.MaxCode {
		return "", fail(CodeInvalidArgument, "component of %d bytes: want 1 to %d bytes", len(code), k.cfg.MaxCode)
	}
	if err := k.validGrants(grants); err != nil {
		return "", err
	}
	sha := codeHash(code)
	key := checkKey(sha, grants)
	if k.checked.has(key) {
		return sha, nil
	}
	var err error
	if isBundle(code) {
		err = k.checkBundle(ctx, code, grants)
	} else {
		err = k.checkComponent(ctx, code, grants)
	}
	if err != nil {
		return "", err
	}
	k.checked.add(key)
	return sha, nil
}

// checkComponent compiles code and checks its imports against grants.
func (k *Kernel) checkComponent(ctx context.Context, code []byte, grants []string) error {
	comp, err := k.cfg.Runtime.Compile(ctx, code)
	if err != nil {
		return fail(CodeInvalidArgument, "the upload is not a usable component: %v", err)
	}
	defer comp.Close()
	if err := comp.Audit().Check(k.cfg.Runtime, k.grantSet(grants)); err != nil {
		return fail(CodeInvalidArgument, "the component needs more than it was granted: %v", err)
	}
	if _, cols := tsdecl.Distinct(comp.Audit().PublicExports()); len(cols) > 0 {
		msgs := make([]string, len(cols))
		for i, c := range cols {
			msgs[i] = c.String()
		}
		return fail(CodeInvalidArgument, "the component's exports collide: %s; callers could reach only one of each, so export one version of an interface and give functions names that differ once kebab-case becomes camelCase", strings.Join(msgs, "; "))
	}
	return nil
}

// validGrants refuses more than 32 grants and every grant the runtime cannot provide
// (runtime.CheckGrant), naming the grant and why. Every way grants reach a gadget (create,
// deploy, blueprint import and instantiate) passes here, through checkCode.
func (k *Kernel) validGrants(grants []string) error {
	if len(grants) > 32 {
		return fail(CodeInvalidArgument, "%d grants: at most 32", len(grants))
	}
	for _, g := range grants {
		if g == "" || len(g) > 128 {
			return fail(CodeInvalidArgument, "grant %.130q: want an interface name such as atelier:host/kv", g)
		}
		if err := k.cfg.Runtime.CheckGrant(g); err != nil {
			return fail(CodeInvalidArgument, "%v", err)
		}
	}
	return nil
}

// usableGrants returns grants without those validGrants would refuse. A gadget stored with
// such a grant (accepted before grants were checked) keeps loading and running with it
// ignored; its info still lists it until a deploy with new grants replaces them.
func (k *Kernel) usableGrants(grants []string) []string {
	return slices.DeleteFunc(slices.Clone(grants), func(g string) bool { return k.cfg.Runtime.CheckGrant(g) != nil })
}

func codeHash(code []byte) string {
	sum := sha256.Sum256(code)
	return hex.EncodeToString(sum[:])
}

// checkKey names a (code, grants) pair; the grants are a set.
func checkKey(sha string, grants []string) string {
	return sha + "\x00" + strings.Join(slices.Sorted(slices.Values(grants)), "\x00")
}

// maxChecked bounds the remembered checks; the set starts over when full.
const maxChecked = 4096

// checkedSet remembers the (code, grants) pairs that passed checkCode.
type checkedSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func (c *checkedSet) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[key]
	return ok
}

func (c *checkedSet) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxChecked {
		c.m = map[string]struct{}{}
	}
	c.m[key] = struct{}{}
}
