package kernel

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"atelier/host/store"
)

// Bounds of a run's WorkspaceContext, which goes into every model call's system prompt.
const (
	maxContextDeclarations = 64 << 10 // TypeScript declarations of all bindings
	maxContextItems        = 100      // gadgets, bindings, accounts, blueprints each
	maxContextInstructions = 16 << 10 // the admin's instructions
)

// Context implements ChatRun: the workspace as the chatting user sees it now, bounded in size
// (lists past maxContextItems and declarations past maxContextDeclarations are cut, with a
// note in Declarations).
func (r *agentRun) Context(ctx context.Context) (WorkspaceContext, error) {
	var out WorkspaceContext
	err := r.enter(ctx, store.RoleUse, "describe the workspace", func(ov *overseer) error {
		role, err := ov.roleOf(r.w.p)
		if err != nil {
			return err
		}
		if out.Workspace, err = ov.info(ctx, r.w.p); err != nil {
			return err
		}
		out.Role = string(role)
		gs, err := ov.gadgetsOf(r.w.p)
		if err != nil {
			return err
		}
		slices.SortFunc(gs, func(a, b store.Gadget) int { return strings.Compare(a.Name, b.Name) })
		for _, g := range gs[:min(len(gs), maxContextItems)] {
			out.Gadgets = append(out.Gadgets, ov.infoOf(g))
		}
		gks, err := r.chatGatekeepers(ov)
		if err != nil {
			return err
		}
		bs, err := r.w.codeBindings(ctx, &callLog{}, gks, nil)
		if err != nil {
			return err
		}
		var decl strings.Builder
		names := slices.Sorted(maps.Keys(bs))
		for i, name := range names[:min(len(names), maxContextItems)] {
			out.Bindings = append(out.Bindings, bs[name].info())
			d, err := bs[name].declare(ctx)
			if err != nil {
				d = fmt.Sprintf("// %s: no declarations (%v)\n", name, err)
			}
			if decl.Len()+len(d) > maxContextDeclarations {
				fmt.Fprintf(&decl, "// ... declarations of %d more bindings left out (describeBinding gives them)\n", len(names)-i)
				break
			}
			decl.WriteString(d)
			decl.WriteString("\n")
		}
		out.Declarations = decl.String()
		return nil
	})
	if err != nil {
		return WorkspaceContext{}, err
	}
	accts, err := (&Authed{k: r.w.k, p: r.w.p}).ListAccounts(ctx)
	if err != nil {
		return WorkspaceContext{}, err
	}
	out.Accounts = accts[:min(len(accts), maxContextItems)]
	bps, err := r.w.ListBlueprints(ctx)
	if err != nil {
		return WorkspaceContext{}, err
	}
	out.Blueprints = bps[:min(len(bps), maxContextItems)]
	out.Instructions = cutText(r.w.k.chatInstructions(ctx), maxContextInstructions)
	return out, nil
}
