// Observer requirements (docs/security.md): the gatekeeper bindings a collaborator must be able
// to read with an account of their own before a workspace shows them anything. A collaborator
// meets them in a panel shown before the workspace opens; the owner sets them on the Sharing tab.
import { h, replace, form, field, attempt, toast } from "../dom.js";

/** The requirements the caller has not met (none for the owner, who is never asked). */
export async function unmetRequirements(ws, role) {
  if (role === "owner") return [];
  const reqs = await ws.listObserverRequirements("");
  return reqs.filter((r) => !r.satisfied);
}

/**
 * Asks a collaborator to pick, for each unmet requirement, an account of their own on the same
 * gatekeeper for the same resource, or to connect one; calls done() once all are met.
 */
export async function renderObserverPanel(el, ctx, info, ws, unmet, done) {
  const person = ctx.conn.user.kind === "user";
  const gks = person && unmet.some((r) => r.candidates.length === 0) ? await ctx.api.listGatekeepers() : [];
  const again = async () => {
    const left = await unmetRequirements(ws, info.role);
    if (left.length === 0) {
      toast(`${info.name} is open to you`);
      await done();
    } else {
      await renderObserverPanel(el, ctx, info, ws, left, done);
    }
  };
  const pick = (r) =>
    form({ class: "inline pick-account" }, h("label", null, h("span", null, "Your account"),
      h("select", { name: "account" }, r.candidates.map((id) => h("option", { value: id }, id)))), "Use this account", async (v) => {
      await ws.satisfyObserverRequirement(r.binding, v.account);
      await again();
    });
  const connect = (r) => {
    const gk = gks.find((g) => g.id === r.gatekeeper);
    if (!gk) return h("p", { class: "notice error" }, `The gatekeeper ${r.gatekeeperName} is not installed on this server any more: ask the workspace's owner.`);
    return form({ class: "connect-for-requirement" }, [
      field("Resource (URL)", { name: "resource", value: r.resource, readonly: true, class: "mono" }),
      gk.credentials.map((c) => field(`${c.name}: ${c.description}`, { name: `cred:${c.name}`, type: "password", required: true })),
    ], "Connect and use", async (v) => {
      const creds = Object.fromEntries(Object.entries(v).filter(([k]) => k.startsWith("cred:")).map(([k, x]) => [k.slice(5), x]));
      const acct = await ctx.api.connectAccount(r.gatekeeper, r.resource, creds);
      await ws.satisfyObserverRequirement(r.binding, acct.id);
      await again();
    });
  };
  replace(
    el,
    h("section", { class: "card observer-panel", id: "observer-panel" },
      h("h2", null, `Before you open ${info.name}`),
      h("p", null, `${info.owner} shows this workspace only to collaborators who can read its data themselves. For each source below, `,
        person ? "pick an account of your own for the same resource, or connect one." : "your user must pick an account of theirs (in the workshop, or with atelier share satisfy)."),
      unmet.map((r) =>
        h("div", { class: "requirement", dataset: { binding: r.binding } },
          h("h3", null, r.gatekeeperName, " ", h("span", { class: "mono resource" }, r.resource)),
          h("p", { class: "muted" }, `Binding ${r.binding} reads it (a ${r.kind || "resource"}). `, r.candidates.length ? "You have an account for it." : "You have no account for it yet."),
          !person ? h("p", { class: "notice" }, r.problem) : r.candidates.length ? pick(r) : connect(r))),
      h("p", null, h("a", { href: "#/" }, "Back to your workspaces"))),
  );
}

/** The owner's settings: which bindings each role must be able to read themselves. */
export async function renderObserverSettings(ws) {
  const [bindings, build] = await Promise.all([ws.listGatekeeperBindings(), ws.listObserverRequirements("build")]);
  const live = bindings.filter((b) => !b.missing);
  const section = h("section", { class: "card", id: "observer-requirements" },
    h("h3", null, "Observer requirements"),
    h("p", { class: "muted" }, "Collaborators with a role see this workspace only once they have picked, for each binding checked here, an account of their own on the same gatekeeper for the same resource. Use's apply to build too."));
  if (live.length === 0) {
    section.append(h("p", { class: "muted" }, "No gadget is bound to a gatekeeper account, so there is nothing to require."));
    return section;
  }
  for (const role of ["use", "build"]) {
    const boxes = live.map((b) => {
      const ref = `${b.gadget}.${b.name}`;
      return h("input", { type: "checkbox", value: ref, dataset: { binding: ref }, checked: build.some((r) => r.binding === ref && r.role === role) });
    });
    section.append(form({ id: `observer-${role}`, class: "observer-role" }, [
      h("h4", null, `Collaborators with the role ${role} must read themselves`),
      live.map((b, i) => h("label", { class: "check" }, boxes[i], h("span", { class: "mono" }, `${b.gadget}.${b.name}`), h("span", { class: "muted" }, ` ${b.gatekeeper} ${b.resource || ""}`))),
    ], `Save for ${role}`, async () => {
      const refs = boxes.filter((x) => x.checked).map((x) => x.value);
      await ws.setObserverRequirements(role, refs);
      toast(refs.length ? `collaborators with the role ${role} must read ${refs.join(", ")} themselves` : `no requirements for ${role}`);
    }));
  }
  return section;
}
