package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"atelier/host/quota"
	"atelier/host/store"
)

// The scheduler (docs/api.md, "Scheduler") calls gadget methods on a schedule. Schedules are
// workspace state, and the store keeps a server-wide index of their next runs: one kernel
// loop polls that index every Config.ScheduleTick and runs what is due through the
// workspace's overseer (starting it if it was idle), so an idle workspace still stops between
// runs. Each run uses the creator's authority, checked again first: a creator who lost build
// access (or a deleted gadget, user or agent) cancels the schedule.

// maxSchedules bounds one workspace's schedules, and maxScheduleArgs the JSON of their args.
const (
	maxSchedules    = 100
	maxScheduleArgs = 16 << 10
)

// ScheduleSpec says when a schedule runs: every EveryMs milliseconds, or once At (RFC 3339).
type ScheduleSpec struct {
	EveryMs int64  `json:"everyMs"`
	At      string `json:"at"`
}

// ScheduleInfo describes a schedule.
type ScheduleInfo struct {
	ID        string    `json:"id"`
	Gadget    string    `json:"gadget"`
	Method    string    `json:"method"`
	Args      []any     `json:"args"`
	EveryMs   int64     `json:"everyMs,omitempty"`
	Next      time.Time `json:"next"`
	Creator   string    `json:"creator"`
	Runs      int64     `json:"runs"`
	LastRun   time.Time `json:"lastRun,omitzero"`
	LastError string    `json:"lastError,omitempty"`
}

// scheduler is the kernel's schedule loop and the runs it started.
type scheduler struct {
	mu      sync.Mutex      // serializes the read-modify-writes of schedule records
	running map[string]bool // "workspace/schedule" of the runs in flight
	runMu   sync.Mutex      // guards running
	stop    chan struct{}
	stopped sync.Once
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// startScheduler starts the schedule loop; stopScheduler ends it and waits for its runs.
func (k *Kernel) startScheduler() {
	ctx, cancel := context.WithCancel(context.Background())
	k.sched.running, k.sched.stop, k.sched.cancel = map[string]bool{}, make(chan struct{}), cancel
	k.sched.wg.Add(1)
	go func() {
		defer k.sched.wg.Done()
		t := time.NewTicker(k.cfg.ScheduleTick)
		defer t.Stop()
		for {
			select {
			case <-k.sched.stop:
				return
			case <-t.C:
				k.runDue(ctx)
				k.hookTick(ctx)
			}
		}
	}()
}

func (k *Kernel) stopScheduler() {
	k.sched.stopped.Do(func() {
		close(k.sched.stop)
		k.sched.cancel()
	})
	k.sched.wg.Wait()
}

// runDue starts a run of each due schedule that is not running already.
func (k *Kernel) runDue(ctx context.Context) {
	due, err := k.st.DueSchedules(ctx, time.Now())
	if err != nil {
		k.log.Error("scheduler", "err", err)
		return
	}
	for _, d := range due {
		key := string(d.Workspace) + "/" + d.Schedule
		k.sched.runMu.Lock()
		busy := k.sched.running[key]
		k.sched.running[key] = true
		k.sched.runMu.Unlock()
		if busy {
			continue
		}
		k.sched.wg.Add(1)
		go func() {
			defer k.sched.wg.Done()
			err := k.withOverseer(ctx, d.Workspace, func(ov *overseer) error { return ov.runSchedule(ctx, d.Schedule) })
			// In a cluster every node sees every due schedule; the node running the workspace
			// (or the first to start it) runs it, the others are refused with MOVED.
			if err != nil && ctx.Err() == nil && !moved(err) {
				k.log.Warn("scheduled run", "workspace", d.Workspace, "schedule", d.Schedule, "err", err)
			}
			k.sched.runMu.Lock()
			delete(k.sched.running, key)
			k.sched.runMu.Unlock()
		}()
	}
}

// schedule returns schedule id of the workspace, or NOT_FOUND.
func (ov *overseer) schedule(id string) (store.Schedule, error) {
	all, err := ov.ws.Schedules()
	return byID(all, err, id, func(s store.Schedule) string { return s.ID }, "schedule")
}

// byID returns the element of all (read with error err) whose id is id, or NOT_FOUND naming
// what it is ("no hook "hk_…" in this workspace").
func byID[T any](all []T, err error, id string, idOf func(T) string, what string) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	i := slices.IndexFunc(all, func(x T) bool { return idOf(x) == id })
	if i < 0 {
		return zero, fail(CodeNotFound, "no %s %q in this workspace", what, id)
	}
	return all[i], nil
}

// runSchedule runs schedule id once if it still exists and its creator may still run it, then
// records the run and the next one (or cancels the schedule, with the reason in the audit log).
func (ov *overseer) runSchedule(ctx context.Context, id string) error {
	s, err := ov.schedule(id)
	if err != nil {
		if errCode(err) == CodeNotFound {
			return nil // cancelled in between
		}
		return err
	}
	p, rec, reason, err := ov.scheduleTarget(ctx, s)
	if err != nil {
		return err
	}
	if reason != "" {
		return ov.endSchedule(ctx, s, reason)
	}
	err = ov.runScheduled(ctx, rec, s)
	if errors.Is(err, errStopped) || (err != nil && ctx.Err() != nil) {
		return err // the workspace or the server stopped before the run: it is retried later
	}
	return ov.recordRun(ctx, p, rec.Name, id, err)
}

// runScheduled makes one call of s on gadget rec; its error is the run's outcome.
func (ov *overseer) runScheduled(ctx context.Context, rec store.Gadget, s store.Schedule) error {
	a, err := ov.actor(ctx, rec.ID)
	if err != nil {
		return err
	}
	var args []any
	if err := json.Unmarshal(s.Args, &args); err != nil {
		return fmt.Errorf("schedule %s args: %w", s.ID, err)
	}
	fn, err := scheduledExport(a, rec.Name, s.Method, args)
	if err != nil {
		return err
	}
	r, err := a.run(ctx, fn.name, args, nil)
	if err != nil {
		return err
	}
	_, err = r.wait()
	return err
}

// scheduledExport returns the export of a that method names, if args fit it.
func scheduledExport(a *actor, gadget, method string, args []any) (exportFunc, error) {
	fn, ok := a.exports[method]
	if !ok {
		return fn, fail(CodeNotFound, "gadget %s has no exported function %q", gadget, method)
	}
	return fn, fn.checkJSON(method, args)
}

// scheduleTarget returns the principal a run acts as (its creator, without a token: it is
// looked up again for each run) and the gadget; or why the schedule must end; or an error
// that leaves it for the next run.
func (ov *overseer) scheduleTarget(ctx context.Context, s store.Schedule) (p *principal, rec store.Gadget, reason string, err error) {
	return ov.runTarget(ctx, s.Creator, s.Agent, s.Gadget, "schedule")
}

// runTarget checks again that creator (and agent, when set) may still make the host call a
// gadget on their behalf (a schedule's run, a hook's fire: what names it): it returns the
// principal the call acts as (without a token) and the gadget; or why the schedule or hook
// must end; or an error that leaves it for the next time.
func (ov *overseer) runTarget(ctx context.Context, creator, agent string, gadget store.GadgetID, what string) (p *principal, rec store.Gadget, reason string, err error) {
	u, err := ov.k.st.User(ctx, creator)
	if errors.Is(err, store.ErrNotFound) {
		return nil, rec, "its creator no longer exists", nil
	} else if err != nil {
		return nil, rec, "", err
	}
	p = &principal{k: ov.k, userID: u.ID, username: u.Name}
	p.checked.Store(ov.k.revocations.Load())
	if agent != "" {
		ag, err := ov.k.st.Agent(ctx, agent)
		if errors.Is(err, store.ErrNotFound) {
			return nil, rec, "its creating agent was revoked", nil
		} else if err != nil {
			return nil, rec, "", err
		}
		p.agent = &ag
	}
	if _, _, err := ov.require(p, store.RoleBuild, what); errCode(err) == CodeForbidden {
		return nil, rec, "its creator lost build access", nil
	} else if err != nil {
		return nil, rec, "", err
	}
	if rec, err = ov.gadget(gadget); errCode(err) == CodeNotFound {
		return nil, rec, "its gadget was deleted", nil
	} else if err != nil {
		return nil, rec, "", err
	}
	if p.checkGadget(ov.id, rec.Name) != nil {
		return nil, rec, "its gadget is outside the creating agent's scope", nil
	}
	return p, rec, "", nil
}

// recordRun stores the outcome of a run of schedule id and its next run (a one-shot ends),
// with an audit line, unless the schedule was cancelled meanwhile.
func (ov *overseer) recordRun(ctx context.Context, p *principal, gadget, id string, runErr error) error {
	ov.k.sched.mu.Lock()
	defer ov.k.sched.mu.Unlock()
	s, err := ov.schedule(id)
	if err != nil {
		if errCode(err) == CodeNotFound {
			return nil
		}
		return err
	}
	now := time.Now().UTC()
	s.Runs++
	s.LastRun, s.LastError = now, ""
	detail := s.Method + ": ok"
	if runErr != nil {
		s.LastError = runErr.Error()
		detail = s.Method + ": " + s.LastError
	}
	mut := store.DeleteSchedule(s.ID)
	if s.EveryMs > 0 {
		every := time.Duration(s.EveryMs) * time.Millisecond
		// Runs missed while the server was down collapse into the one just made.
		if s.Next = s.Next.Add(every); !s.Next.After(now) {
			s.Next = now.Add(every)
		}
		mut = store.PutSchedule(s)
	}
	return ov.write(ctx, mut, auditEntry(p, "schedule.run", gadget, detail))
}

// endSchedule cancels s for reason, with an audit line by the scheduler.
func (ov *overseer) endSchedule(ctx context.Context, s store.Schedule, reason string) error {
	ov.k.sched.mu.Lock()
	defer ov.k.sched.mu.Unlock()
	return ov.write(ctx, store.DeleteSchedule(s.ID), auditLine("scheduler", "schedule.cancel", s.ID, reason))
}

// errCode is the code err carries (an *Error's own, else codeOf's classification).
func errCode(err error) Code {
	var ke *Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return codeOf(err)
}

// parseSpec checks spec and returns the first run and the period (zero for a one-shot).
func (k *Kernel) parseSpec(spec ScheduleSpec, now time.Time) (time.Time, int64, error) {
	switch {
	case spec.EveryMs != 0 && spec.At != "":
		return time.Time{}, 0, fail(CodeInvalidArgument, "schedule: give everyMs or at, not both")
	case spec.EveryMs != 0:
		if minMs := k.cfg.ScheduleMinEvery.Milliseconds(); spec.EveryMs < max(minMs, 1) {
			return time.Time{}, 0, fail(CodeInvalidArgument, "schedule: everyMs %d is below the minimum %d", spec.EveryMs, max(minMs, 1))
		}
		return now.Add(time.Duration(spec.EveryMs) * time.Millisecond), spec.EveryMs, nil
	case spec.At != "":
		at, err := time.Parse(time.RFC3339Nano, spec.At)
		if err != nil {
			return time.Time{}, 0, fail(CodeInvalidArgument, "schedule: at %q is not an RFC 3339 time", spec.At)
		}
		return at.UTC(), 0, nil
	}
	return time.Time{}, 0, fail(CodeInvalidArgument, "schedule: give everyMs (a period) or at (a time)")
}

// Schedule calls method of gadget with args (JSON values) per spec, as the caller: returns
// {id, next}. Build role.
func (w *Workspace) Schedule(ctx context.Context, gadget, method string, args []any, spec ScheduleSpec) (map[string]any, error) {
	now := time.Now().UTC()
	next, every, err := w.k.parseSpec(spec, now)
	if err != nil {
		return nil, err
	}
	if args == nil {
		args = []any{}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fail(CodeInvalidArgument, "schedule: args must be JSON values: %v", err)
	}
	if len(raw) > maxScheduleArgs {
		return nil, fail(CodeInvalidArgument, "schedule: args of %d bytes exceed %d", len(raw), maxScheduleArgs)
	}
	s := store.Schedule{ID: store.NewID("sch"), Method: method, Args: raw, EveryMs: every, Next: next, Creator: w.p.userID, Created: now}
	if w.p.agent != nil {
		s.Agent = w.p.agent.ID
	}
	err = w.enter(ctx, store.RoleBuild, "schedule", func(ov *overseer) error {
		rec, err := w.scopedGadget(ov, gadget)
		if err != nil {
			return err
		}
		a, err := ov.actor(ctx, rec.ID)
		if err != nil {
			return err
		}
		if _, err := scheduledExport(a, rec.Name, method, args); err != nil {
			return err
		}
		s.Gadget = rec.ID
		w.k.sched.mu.Lock()
		defer w.k.sched.mu.Unlock()
		all, err := ov.ws.Schedules()
		if err != nil {
			return err
		}
		if len(all) >= maxSchedules {
			return fail(CodeFailedPrecondition, "schedule: workspace %s has %d schedules already (the most)", w.id, len(all))
		}
		meta, err := ov.snapshot()
		if err != nil {
			return err
		}
		return w.k.charge(ctx, meta.Owner, quota.Limits{Schedules: 1}, func() error {
			return ov.write(ctx, store.PutSchedule(s), auditEntry(w.p, "schedule.create", rec.Name, fmt.Sprintf("%s %s next %s", s.ID, method, next.Format(time.RFC3339))))
		})
	})
	if err != nil {
		return nil, wrapErr(err, "schedule %s.%s", gadget, method)
	}
	return map[string]any{"id": s.ID, "next": next}, nil
}

// ListSchedules lists the workspace's schedules. Build role.
func (w *Workspace) ListSchedules(ctx context.Context) ([]ScheduleInfo, error) {
	out := []ScheduleInfo{}
	err := w.enter(ctx, store.RoleBuild, "listSchedules", func(ov *overseer) error {
		all, err := ov.ws.Schedules()
		for _, s := range all {
			info := ScheduleInfo{ID: s.ID, Gadget: string(s.Gadget), Method: s.Method, EveryMs: s.EveryMs, Next: s.Next, Creator: w.k.username(ctx, s.Creator), Runs: s.Runs, LastRun: s.LastRun, LastError: s.LastError}
			if rec, err := ov.gadget(s.Gadget); err == nil {
				info.Gadget = rec.Name
			}
			if err := json.Unmarshal(s.Args, &info.Args); err != nil {
				return fmt.Errorf("schedule %s args: %w", s.ID, err)
			}
			out = append(out, info)
		}
		return err
	})
	return out, err
}

// CancelSchedule deletes schedule id. Build role.
func (w *Workspace) CancelSchedule(ctx context.Context, id string) error {
	return w.enter(ctx, store.RoleBuild, "cancelSchedule", func(ov *overseer) error {
		w.k.sched.mu.Lock()
		defer w.k.sched.mu.Unlock()
		s, err := ov.schedule(id)
		if err != nil {
			return err
		}
		return ov.write(ctx, store.DeleteSchedule(s.ID), auditEntry(w.p, "schedule.cancel", s.ID, s.Method))
	})
}
