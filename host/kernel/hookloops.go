package kernel

import (
	"context"
	"errors"
	"time"

	"atelier/host/gatekeeper"
	"atelier/host/store"
)

// The poll and notify sources of hooks run beside the scheduler: at each of its ticks
// (Config.ScheduleTick) the kernel reads the server-wide hook index, polls the poll hooks that
// are due (PollHook; a payload fires the hook) and keeps one watch (WatchHook) running per
// notify hook of the workspaces this node runs (or would start), so that after a restart or a
// failover the node that runs the workspace takes its watches over.

// hookWatch is a running watch of a notify hook.
type hookWatch struct {
	ov   *overseer
	stop func()
	// failed is when the watch could not start (zero while it runs): it is tried again a
	// minute later.
	failed time.Time
}

// hookTick polls the due poll hooks and starts the missing watches.
func (k *Kernel) hookTick(ctx context.Context) {
	refs, err := k.st.HookRefs(ctx)
	if err != nil {
		k.log.Error("hooks", "err", err)
		return
	}
	now := time.Now()
	notify := map[string]bool{}
	for _, ref := range refs {
		switch ref.Source {
		case gatekeeper.HookPoll:
			if !ref.Next.After(now) {
				k.pollLater(ctx, ref)
			}
		case gatekeeper.HookNotify:
			notify[ref.ID] = true
			if k.leads(ctx, ref.Workspace) {
				k.watchLater(ctx, ref)
			}
		}
	}
	k.hooks.mu.Lock()
	for id, w := range k.hooks.watches {
		if !notify[id] || w.ov.isStopped() || (!w.failed.IsZero() && now.Sub(w.failed) > time.Minute) {
			w.stop()
			delete(k.hooks.watches, id)
		}
	}
	k.hooks.mu.Unlock()
}

// leads reports whether this node runs workspace ws, or would start it (a single node does).
func (k *Kernel) leads(ctx context.Context, ws store.WorkspaceID) bool {
	c := k.cfg.Cluster
	if c == nil {
		return true
	}
	node, held, err := c.Holder(ctx, ws)
	if err != nil {
		return false
	}
	if !held {
		if node, err = c.Pick(ctx, ws); err != nil {
			return false
		}
	}
	return node == c.Self()
}

// pollLater polls ref's hook unless a poll of it is running.
func (k *Kernel) pollLater(ctx context.Context, ref store.HookRef) {
	k.hooks.mu.Lock()
	busy := k.hooks.polling[ref.ID]
	k.hooks.polling[ref.ID] = true
	k.hooks.mu.Unlock()
	if busy {
		return
	}
	k.sched.wg.Add(1)
	go func() {
		defer k.sched.wg.Done()
		err := k.withOverseer(ctx, ref.Workspace, func(ov *overseer) error { return ov.pollHook(ctx, ref.ID) })
		// In a cluster every node sees every due hook; the node running the workspace polls it.
		if err != nil && ctx.Err() == nil && !moved(err) {
			k.log.Warn("hook poll", "workspace", ref.Workspace, "hook", ref.ID, "err", err)
		}
		k.hooks.mu.Lock()
		delete(k.hooks.polling, ref.ID)
		k.hooks.mu.Unlock()
	}()
}

// pollHook polls hook id once if it is due and may still fire, fires it when the gatekeeper
// found something, and records the next poll.
func (ov *overseer) pollHook(ctx context.Context, id string) error {
	h, err := ov.hook(id)
	if errCode(err) == CodeNotFound {
		return nil
	} else if err != nil {
		return err
	}
	now := time.Now()
	if h.Next.After(now) {
		return nil // polled meanwhile
	}
	p, rec, reason, err := ov.hookTarget(ctx, h)
	if err != nil {
		return err
	}
	if reason != "" {
		return ov.removeHooks(ctx, []store.Hook{h}, "hooks", reason)
	}
	next := now.Add(time.Duration(max(h.EveryMs, 1)) * time.Millisecond).UTC()
	ctx, cancel := context.WithTimeout(ctx, ov.k.callTimeout())
	defer cancel()
	gh, err := ov.k.gkHook(h)
	if err != nil {
		return err
	}
	sess, err := ov.hookSession(ctx, h)
	var payload []byte
	if err == nil {
		payload, err = sess.PollHook(ctx, gh)
	}
	if err != nil {
		ov.links.cut(hookLinkKey(h))
		return ov.recordFire(ctx, p, rec.Name, id, false, errors.New("poll: "+err.Error()), next)
	}
	if payload == nil {
		return ov.recordFire(ctx, p, rec.Name, id, false, nil, next)
	}
	_ = ov.fire(ctx, p, rec, h, payload, next) // its outcome is recorded
	return nil
}

// watchLater starts the watch of ref's notify hook unless it runs.
func (k *Kernel) watchLater(ctx context.Context, ref store.HookRef) {
	k.hooks.mu.Lock()
	_, running := k.hooks.watches[ref.ID]
	k.hooks.mu.Unlock()
	if running {
		return
	}
	err := k.withOverseer(ctx, ref.Workspace, func(ov *overseer) error {
		h, err := ov.hook(ref.ID)
		if err != nil {
			return err
		}
		k.watchHook(ov, h)
		return nil
	})
	if err != nil && ctx.Err() == nil && !moved(err) && errCode(err) != CodeNotFound {
		k.log.Warn("hook watch", "workspace", ref.Workspace, "hook", ref.ID, "err", err)
	}
}

// watchHook starts the watch of notify hook h on ov (unless one runs): each event the
// gatekeeper pushes fires the hook. A gatekeeper that cannot watch records the error on the
// hook, and the next tick tries again.
func (k *Kernel) watchHook(ov *overseer, h store.Hook) {
	k.hooks.mu.Lock()
	if _, running := k.hooks.watches[h.ID]; running {
		k.hooks.mu.Unlock()
		return
	}
	w := &hookWatch{ov: ov, stop: func() {}}
	k.hooks.watches[h.ID] = w
	k.hooks.mu.Unlock()
	ctx := k.hooks.ctx
	stop, err := func() (func(), error) {
		gh, err := k.gkHook(h)
		if err != nil {
			return nil, err
		}
		sess, err := ov.hookSession(ctx, h)
		if err != nil {
			return nil, err
		}
		// fire runs on the watch's own goroutine, one event at a time: a gadget slower than
		// the service makes the gatekeeper drop events (its queue is bounded) rather than the
		// kernel start a call per event; past the hook's rate an event is dropped as well.
		return sess.WatchHook(ctx, gh, func(payload []byte) {
			if wait := k.hooks.rate.Take(h.ID); wait > 0 {
				k.log.Info("hook fire", "workspace", ov.id, "hook", h.ID, "err", "over its rate: event dropped")
				return
			}
			err := k.withOverseer(ctx, ov.id, func(ov *overseer) error { return ov.fireHook(ctx, h.ID, payload, time.Time{}) })
			if err != nil && ctx.Err() == nil && !moved(err) && errCode(err) != CodeNotFound {
				k.log.Info("hook fire", "workspace", ov.id, "hook", h.ID, "err", err)
			}
		})
	}()
	if err != nil {
		_ = ov.recordFire(ctx, nil, "", h.ID, false, errors.New("watch: "+err.Error()), time.Time{})
		k.hooks.mu.Lock()
		w.failed = time.Now()
		k.hooks.mu.Unlock()
		ov.links.cut(hookLinkKey(h))
		return
	}
	k.hooks.mu.Lock()
	w.stop = stop
	k.hooks.mu.Unlock()
}

// unwatchHook stops hook id's watch, if it runs here.
func (k *Kernel) unwatchHook(id string) {
	k.hooks.mu.Lock()
	w := k.hooks.watches[id]
	delete(k.hooks.watches, id)
	k.hooks.mu.Unlock()
	if w != nil {
		w.stop()
	}
}

// stopHooks stops every watch and waits for the fires and unsubscriptions in flight.
func (k *Kernel) stopHooks() {
	k.hooks.cancel()
	k.hooks.mu.Lock()
	watches := k.hooks.watches
	k.hooks.watches = map[string]*hookWatch{}
	k.hooks.mu.Unlock()
	for _, w := range watches {
		w.stop()
	}
	k.hooks.wg.Wait()
	k.hooks.peers.close()
}

// dropAccountHooks removes the hooks of account in every workspace that this node runs or can
// start, and waits for their unsubscriptions (the account is deleted after it, so that its
// gatekeeper may still unsubscribe them); a workspace run by another node drops them when
// they next fire or are listed.
func (k *Kernel) dropAccountHooks(ctx context.Context, account, actor string) {
	refs, err := k.st.HookRefs(ctx)
	if err != nil {
		k.log.Warn("remove the hooks of a disconnected account", "account", account, "err", err)
		return
	}
	done := map[store.WorkspaceID]bool{}
	var unsubscribed []<-chan struct{}
	defer func() {
		for _, c := range unsubscribed {
			select {
			case <-c:
			case <-ctx.Done():
				return
			}
		}
	}()
	for _, ref := range refs {
		if ref.Account != account || done[ref.Workspace] {
			continue
		}
		done[ref.Workspace] = true
		err := k.withOverseer(ctx, ref.Workspace, func(ov *overseer) error {
			hs, err := ov.hooksWhere(func(h store.Hook) bool { return h.Account == account })
			if err != nil {
				return err
			}
			chans, err := ov.removeHooksWait(ctx, hs, actor, "its account was disconnected")
			unsubscribed = append(unsubscribed, chans...)
			return err
		})
		if err != nil && !moved(err) {
			k.log.Warn("remove the hooks of a disconnected account", "account", account, "workspace", ref.Workspace, "err", err)
		}
	}
}
