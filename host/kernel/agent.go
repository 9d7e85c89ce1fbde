package kernel

import (
	"context"
	"fmt"

	"atelier/capnweb"

	"atelier/host/store"
)

// AgentSession is an agent's access for front ends in the same process (the MCP server): the
// Code Mode calls of a Workspace, checked like the agent's Cap'n Web calls, and audited as
// made through the front end. Every call checks that the agent's token still holds.
type AgentSession struct {
	k   *Kernel
	p   *principal
	via string
	// forwarded marks a session serving a call another node forwarded (peerMain.AgentCall):
	// that node found this one running the workspace, so the call runs here without a second
	// lookup (and cannot be forwarded on, from node to node).
	forwarded bool
}

// AuthenticateAgent turns an agent token, presented from remoteAddr (host without port, ""
// when unknown), into an AgentSession whose calls the audit log shows as made via the named
// front end. Failures count against the address like failed authenticate() calls; a user's
// token is refused (UNAUTHORIZED): front ends for agents take agent tokens only.
func (k *Kernel) AuthenticateAgent(ctx context.Context, token, remoteAddr, via string) (*AgentSession, error) {
	p, err := k.authenticateAt(ctx, token, remoteAddr)
	if err != nil {
		return nil, err
	}
	if p.agent == nil {
		return nil, fail(CodeUnauthorized, "this takes an agent token, not a user's: create one with createAgent(name, scope)")
	}
	return &AgentSession{k: k, p: p, via: via}, nil
}

// AgentID is the agent's id.
func (s *AgentSession) AgentID() string { return s.p.agent.ID }

// String names the agent and its owner ("ada/agent:helper").
func (s *AgentSession) String() string { return s.p.name() }

// Workspaces lists the workspaces of the agent's scope that it can reach now.
func (s *AgentSession) Workspaces(ctx context.Context) ([]WorkspaceInfo, error) {
	return (&Authed{k: s.k, p: s.p}).ListWorkspaces(ctx)
}

// workspace returns workspace id as the agent sees it.
func (s *AgentSession) workspace(id store.WorkspaceID) *Workspace {
	return &Workspace{k: s.k, p: s.p, id: id}
}

// audit records a read-only Code Mode call.
func (s *AgentSession) audit(ctx context.Context, w *Workspace, action, detail string) error {
	return s.k.withOverseer(ctx, w.id, func(ov *overseer) error {
		return ov.audit(ctx, s.p, action, "executeCode", fmt.Sprintf("via %s; %s", s.via, detail))
	})
}

// ListBindings is Workspace.ListBindings in workspace ws.
func (s *AgentSession) ListBindings(ctx context.Context, ws store.WorkspaceID) ([]BindingInfo, error) {
	if out, local, err := atOwner[[]BindingInfo](ctx, s, ws, "listBindings", "", CodeOptions{}); !local {
		return out, err
	}
	w := s.workspace(ws)
	out, err := w.listBindings(ctx, nil)
	if err != nil {
		return nil, err
	}
	return out, s.audit(ctx, w, "code.list_bindings", fmt.Sprintf("%d bindings", len(out)))
}

// DescribeBinding is Workspace.DescribeBinding in workspace ws.
func (s *AgentSession) DescribeBinding(ctx context.Context, ws store.WorkspaceID, name string) (string, error) {
	if out, local, err := atOwner[string](ctx, s, ws, "describeBinding", name, CodeOptions{}); !local {
		return out, err
	}
	w := s.workspace(ws)
	out, err := w.describeBinding(ctx, nil, name)
	if err != nil {
		return "", err
	}
	return out, s.audit(ctx, w, "code.describe_binding", name)
}

// ExecuteCode is Workspace.ExecuteCode in workspace ws.
func (s *AgentSession) ExecuteCode(ctx context.Context, ws store.WorkspaceID, code string, opts CodeOptions) (CodeResult, error) {
	if out, local, err := atOwner[CodeResult](ctx, s, ws, "executeCode", code, opts); !local {
		return out, err
	}
	return s.workspace(ws).executeCode(ctx, code, opts, s.via)
}

// CommitDryRun is Workspace.CommitDryRun in workspace ws.
func (s *AgentSession) CommitDryRun(ctx context.Context, ws store.WorkspaceID, id string) (DryRunCommit, error) {
	if out, local, err := atOwner[DryRunCommit](ctx, s, ws, "commitDryRun", id, CodeOptions{}); !local {
		return out, err
	}
	return s.workspace(ws).commitDryRun(ctx, id, s.via)
}

// DiscardDryRun is Workspace.DiscardDryRun in workspace ws.
func (s *AgentSession) DiscardDryRun(ctx context.Context, ws store.WorkspaceID, id string) error {
	if _, local, err := atOwner[bool](ctx, s, ws, "discardDryRun", id, CodeOptions{}); !local {
		return err
	}
	return s.workspace(ws).discardDryRun(ctx, id, s.via)
}

// remote reports the node running workspace ws when it is another node of the cluster.
func (s *AgentSession) remote(ctx context.Context, ws store.WorkspaceID) (store.NodeID, bool) {
	c := s.k.cfg.Cluster
	if c == nil || s.forwarded {
		return "", false
	}
	node, held, err := c.Holder(ctx, ws)
	return node, err == nil && held && node != c.Self()
}

// atOwner runs an AgentSession call on the node running ws when that is another node, and
// follows the workspace when it moved before the call ran there (MOVED: the call did not run);
// local reports that this node runs it, or nobody does, so the caller runs the call here.
func atOwner[T any](ctx context.Context, s *AgentSession, ws store.WorkspaceID, op, arg string, opts CodeOptions) (out T, local bool, err error) {
	for m := s.k.followMoves(); ; {
		more, werr := m.next(ctx)
		if werr != nil {
			return out, false, werr
		}
		if !more {
			return out, false, err
		}
		node, ok := s.remote(ctx, ws)
		if !ok {
			return out, true, nil
		}
		if out, err = onPeer[T](ctx, s, node, ws, op, arg, opts); !moved(err) {
			return out, false, err
		}
	}
}

// onPeer runs an AgentSession call on the node running the workspace, as the same agent and
// front end (peerMain.AgentCall there).
func onPeer[T any](ctx context.Context, s *AgentSession, node store.NodeID, ws store.WorkspaceID, op, arg string, opts CodeOptions) (T, error) {
	var zero T
	sess, err := s.k.cfg.Cluster.Dial(ctx, node, s.p.hash)
	if err != nil {
		return zero, fail(CodeMoved, "reach node %s running workspace %s: %v; try again", node, ws, err)
	}
	defer sess.Close()
	return capnweb.AwaitAs[T](ctx, sess.Main().Call(ctx, "agentCall", string(ws), s.via, op, arg, opts))
}

// peerMain is the main object of a peer session (PeerMain): the principal's API, plus the
// calls another node's in-process front ends forward to this one.
type peerMain struct {
	*Authed
}

// AgentCall runs an AgentSession call for another node's front end (named via), as the
// session's agent: op is listBindings, describeBinding (arg: the binding's name),
// executeCode (arg: the code, with opts), commitDryRun or discardDryRun (arg: the dry run's
// id; discardDryRun answers true).
func (m *peerMain) AgentCall(ctx context.Context, ws store.WorkspaceID, via, op, arg string, opts CodeOptions) (any, error) {
	if m.p.agent == nil {
		return nil, fail(CodeUnauthorized, "agentCall takes an agent's session")
	}
	s := &AgentSession{k: m.k, p: m.p, via: via, forwarded: true}
	switch op {
	case "listBindings":
		return s.ListBindings(ctx, ws)
	case "describeBinding":
		return s.DescribeBinding(ctx, ws, arg)
	case "executeCode":
		return s.ExecuteCode(ctx, ws, arg, opts)
	case "commitDryRun":
		return s.CommitDryRun(ctx, ws, arg)
	case "discardDryRun":
		return true, s.DiscardDryRun(ctx, ws, arg)
	}
	return nil, fail(CodeInvalidArgument, "agentCall: unknown call %q", op)
}
