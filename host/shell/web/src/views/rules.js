// Auto-approve rules: "apply actions of this kind from my accounts on this gatekeeper without
// asking", per workspace (setAutoApprove). Each person has their own; agents have none.
import { h, replace, attempt, toast } from "../dom.js";

export async function renderRules(el, ctx) {
  const { api, ws, conn } = ctx;
  if (conn.user.kind !== "user") {
    replace(el, h("p", { class: "muted" }, "Agents have no auto-approve rules: the person who owns the account decides."));
    return;
  }
  const [rules, gks] = await Promise.all([ws.listAutoApprove(), api.listGatekeepers()]);
  const allowing = gks.filter((g) => (g.autoApprovable || []).length > 0);
  const kind = h("select", { name: "kind", required: true });
  // A gatekeeper whose kinds are open ("*": the MCP gatekeeper's tools) takes a typed kind.
  const kindText = h("input", { name: "kind-text", placeholder: "a tool's name, e.g. write_file", hidden: true });
  const open = () => (allowing.find((x) => x.id === gk.value)?.autoApprovable || []).includes("*");
  const gk = h("select", { name: "gatekeeper", required: true }, allowing.map((g) => h("option", { value: g.id }, `${g.name} ${g.version}`)));
  const showKinds = () => {
    const g = allowing.find((x) => x.id === gk.value);
    replace(kind, (g ? g.autoApprovable : []).map((k) => h("option", { value: k }, k)));
    kind.hidden = open();
    kind.required = !open();
    kindText.hidden = !open();
    kindText.required = open();
  };
  gk.addEventListener("change", showKinds);
  showKinds();
  const button = h("button", { type: "submit" }, "Add rule");
  const add = h("form", { id: "add-rule", class: "inline" },
    h("label", null, h("span", null, "Gatekeeper"), gk),
    h("label", null, h("span", null, "Action kind"), kind, kindText),
    button);
  add.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    button.disabled = true;
    try {
      await attempt(async () => {
        const k = open() ? kindText.value.trim() : kind.value;
        await ws.setAutoApprove(gk.value, k, true);
        toast(`actions of kind ${k} are now applied without asking`);
        ctx.refresh();
      });
    } finally {
      button.disabled = false;
    }
  });
  replace(
    el,
    h("h3", null, "Auto-approve rules"),
    h("p", { class: "muted" }, "A rule applies, without asking you, the actions of one kind that your accounts on a gatekeeper submit in this workspace, when the gatekeeper marked them safe to auto-approve. Adding one also applies such actions already waiting."),
    rules.length === 0
      ? h("p", { class: "muted", id: "no-rules" }, "No rules: every action waits for your decision in Approvals.")
      : h("table", { class: "list", id: "rules" },
          h("thead", null, h("tr", null, ["Gatekeeper", "Action kind", ""].map((t) => h("th", null, t)))),
          h("tbody", null,
            rules.map((r) =>
              h("tr", { dataset: { gatekeeper: r.gatekeeper, kind: r.kind } },
                h("td", null, r.name || h("span", { class: "muted" }, "removed gatekeeper"), h("div", { class: "muted mono" }, r.gatekeeper.slice(0, 19))),
                h("td", { class: "mono" }, r.kind),
                h("td", { class: "actions" },
                  h("button", { class: "small danger remove", text: "Remove", onclick: () => attempt(async () => {
                    await ws.setAutoApprove(r.gatekeeper, r.kind, false);
                    toast(`actions of kind ${r.kind} wait for you again`);
                    ctx.refresh();
                  }) })))))),
    h("section", { class: "card" },
      h("h3", null, "Add a rule"),
      allowing.length === 0
        ? h("p", { class: "muted" }, gks.length === 0 ? "No gatekeepers are installed on this server." : "No installed gatekeeper lets its actions be auto-approved.")
        : add),
  );
}
