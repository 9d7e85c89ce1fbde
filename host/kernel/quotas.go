package kernel

import "atelier/host/quota"

// limits returns the quotas in force, every field set (quota.Limits.Effective).
func (k *Kernel) limits() quota.Limits {
	if l := k.quotas.Load(); l != nil {
		return *l
	}
	l := k.cfg.Quotas.Effective()
	k.quotas.CompareAndSwap(nil, &l)
	return *k.quotas.Load()
}
