// Bindings: gadget -> gadget and gadget -> gatekeeper account, each listed with Unbind, and
// the forms that bind.
import { h, replace, form, select, field, attempt, toast, errorNode } from "../dom.js";

/**
 * The gatekeeper bindings as a table with an Unbind button each, or the error ({err}) that
 * listing them ended in: the rest of the tab works without them.
 */
function gatekeeperTable(ctx, { bindings, err }) {
  const { ws } = ctx;
  if (err) return h("p", { class: "muted", id: "gatekeeper-bindings-error" }, "The gatekeeper bindings could not be listed: ", errorNode(err));
  if (bindings.length === 0) return h("p", { class: "muted" }, "No gadget reaches a gatekeeper account.");
  return h("table", { class: "list", id: "gatekeeper-bindings" },
    h("thead", null, h("tr", null, ["Gadget", "Name", "Gatekeeper", "Account", ""].map((t) => h("th", null, t)))),
    h("tbody", null,
      bindings.map((b) =>
        h("tr", { dataset: { gadget: b.gadget, name: b.name } },
          h("td", null, b.gadget),
          h("td", { class: "mono" }, b.name),
          h("td", null, b.missing ? h("span", { class: "muted" }, "account disconnected") : b.gatekeeper),
          h("td", null, b.missing ? h("span", { class: "mono muted" }, b.account) : [`${b.owner}'s `, h("span", { class: "mono" }, b.resource)]),
          h("td", null, unbindButton(ctx, b.gadget, b.name, () => ws.unbindGatekeeper(b.gadget, b.name)))))));
}

/** An Unbind button for binding name of gadget: unbind() removes it. */
function unbindButton(ctx, gadget, name, unbind) {
  return h("button", {
    class: "small unbind",
    text: "Unbind",
    onclick: () =>
      attempt(async () => {
        await unbind();
        toast(`unbound ${gadget}.${name}`);
        ctx.refresh();
      }),
  });
}

export async function renderBindings(el, ctx) {
  const { ws, api } = ctx;
  const [gadgets, gkBindings, accounts] = await Promise.all([
    ws.listGadgets(),
    ws.listGatekeeperBindings().then((bindings) => ({ bindings }), (err) => ({ err })),
    api.listAccounts().catch(() => []),
  ]);
  const names = gadgets.map((g) => [g.name, g.name]);
  const rows = gadgets.flatMap((g) =>
    Object.entries(g.bindings || {}).map(([name, target]) =>
      h(
        "tr",
        null,
        h("td", null, g.name),
        h("td", { class: "mono" }, name),
        h("td", null, target),
        h("td", null, unbindButton(ctx, g.name, name, () => ws.unbind(g.name, name))),
      ),
    ),
  );
  replace(
    el,
    h("h3", null, "Gadget to gadget"),
    rows.length === 0
      ? h("p", { class: "muted" }, "No gadget reaches another gadget.")
      : h("table", { class: "list", id: "bindings" },
          h("thead", null, h("tr", null, h("th", null, "Gadget"), h("th", null, "Name"), h("th", null, "Target"), h("th", null, ""))),
          h("tbody", null, rows)),
    h("h3", null, "Gadget to gatekeeper account"),
    gatekeeperTable(ctx, gkBindings),
    h(
      "div",
      { class: "columns" },
      h(
        "section",
        { class: "card" },
        h("h3", null, "Bind a gadget to a gadget"),
        form({ id: "bind-gadget" }, [select("Gadget", "gadget", names), field("As name", { name: "name", required: true }), select("Target gadget", "target", names)], "Bind", async (v) => {
          await ws.bind(v.gadget, v.name, v.target);
          toast(`${v.gadget} reaches ${v.target} as ${v.name}`);
          ctx.refresh();
        }),
      ),
      h(
        "section",
        { class: "card" },
        h("h3", null, "Bind a gadget to a gatekeeper account"),
        accounts.length === 0
          ? h("p", { class: "muted" }, "Connect an account on the Gatekeepers page first.")
          : form(
              { id: "bind-gatekeeper" },
              [select("Gadget", "gadget", names), field("As name", { name: "name", required: true }), select("Account", "account", accounts.map((a) => [a.id, `${a.name} (${a.resource})`]))],
              "Bind",
              async (v) => {
                await ws.bindGatekeeper(v.gadget, v.name, v.account);
                toast(`${v.gadget} reaches the account as ${v.name}`);
                ctx.refresh();
              },
            ),
      ),
    ),
  );
}
