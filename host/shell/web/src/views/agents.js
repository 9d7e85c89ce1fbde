// Agents: principals narrower than the user, with tokens for Code Mode over Cap'n Web or MCP.
import { h, replace, form, field, select, attempt, toast, json, when } from "../dom.js";

export async function renderAgents(el, ctx) {
  const { api } = ctx;
  const [agents, workspaces] = await Promise.all([api.listAgents(), api.listWorkspaces()]);
  const shown = h("div", { id: "agent-token" });
  replace(
    el,
    h("h1", null, "Agents"),
    h("p", { class: "muted" }, "An agent acts for you in the workspaces and gadgets of its scope, never beyond your own access. Its token is shown once."),
    agents.length === 0
      ? h("p", { class: "muted" }, "No agents yet.")
      : h("table", { class: "list", id: "agents" },
          h("thead", null, h("tr", null, ["Name", "Scope", "Created", ""].map((t) => h("th", null, t)))),
          h("tbody", null,
            agents.map((a) =>
              h("tr", null,
                h("td", null, a.name),
                h("td", null, h("pre", { class: "output small" }, json(a.scope))),
                h("td", null, when(a.created)),
                h("td", null, h("button", { class: "small danger", text: "Revoke", onclick: () => attempt(async () => {
                  await api.revokeAgent(a.id);
                  toast(`revoked ${a.name}`);
                  ctx.refresh();
                }) })))))),
    h("section", { class: "card" },
      h("h3", null, "New agent"),
      workspaces.length === 0
        ? h("p", { class: "muted" }, "Create a workspace first.")
        : form(
            { id: "create-agent" },
            [
              field("Name", { name: "name", required: true }),
              select("Workspace", "workspace", workspaces.map((w) => [w.id, w.name])),
              select("Role", "role", [["use", "use"], ["build", "build"]]),
              field("Gadgets (comma-separated, * for all)", { name: "gadgets", value: "*" }),
            ],
            "Create agent",
            async (v) => {
              const gadgets = v.gadgets.split(",").map((s) => s.trim()).filter(Boolean);
              const scope = { workspaces: { [v.workspace]: { role: v.role, gadgets } } };
              const { token } = await api.createAgent(v.name, scope);
              replace(shown, h("p", null, `Token of ${v.name} (copy it now; it is not shown again):`), h("input", { class: "mono wide", readonly: true, value: token }));
              const list = await api.listAgents();
              toast(`created ${v.name}; ${list.length} agents`);
            },
          ),
      shown),
  );
}
