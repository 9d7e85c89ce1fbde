// The gatekeeper action log of a workspace: pending actions are approved or rejected live.
// The server sends the newest entries and, separately, every pending action (however old):
// both are shown, newest first.
import { h, replace, attempt, json } from "../dom.js";

// merge returns the recent entries plus the pending actions older than them, in ID order.
function merge(recent, pending) {
  const seen = new Set(recent.map((a) => a.id));
  return pending.filter((a) => !seen.has(a.id)).concat(recent).sort((a, b) => a.id - b.id);
}

export async function renderApprovals(el, ctx) {
  const { ws } = ctx;
  const table = h("div", { id: "actions" });
  const draw = (recent, pending) => {
    const actions = merge(recent, pending);
    replace(
      table,
      actions.length === 0
        ? h("p", { class: "muted" }, "No gatekeeper actions or observations yet.")
        : h("table", { class: "list" },
            h("thead", null, h("tr", null, ["#", "State", "Caller", "Gatekeeper and resource", "What", ""].map((t) => h("th", null, t)))),
            h("tbody", null,
              actions
                .slice()
                .reverse()
                .map((a) =>
                  h("tr", { dataset: { action: a.id, state: a.state } },
                    h("td", null, a.id),
                    h("td", null, h("span", { class: `state ${a.state}` }, a.state), a.autoApproved ? " (auto)" : ""),
                    h("td", null, a.caller),
                    h("td", { class: "account", title: a.account }, h("strong", { class: "gatekeeper-name" }, a.gatekeeper || "removed gatekeeper"), h("div", { class: "muted mono resource" }, a.resource)),
                    h("td", null, h("strong", null, a.title), h("div", null, a.description), a.result !== undefined ? h("pre", { class: "output" }, json(a.result)) : null),
                    h("td", { class: "actions" },
                      a.state === "pending"
                        ? [
                            h("button", { class: "small approve", text: "Approve", onclick: () => attempt(() => ws.approveAction(a.id)) }),
                            h("button", { class: "small danger reject", text: "Reject", onclick: () => attempt(() => ws.rejectAction(a.id)) }),
                          ]
                        : null),
                  ),
                )),
          ),
    );
  };
  const [recent, pending] = await Promise.all([ws.listActions(), ws.listActions({ pending: true })]);
  draw(recent, pending);
  const sub = await ws.subscribeActions((ev) => draw(ev.actions, ev.pending || []));
  ctx.onCleanup(() => sub.cancel().catch(() => {}));
  replace(el, h("p", { class: "muted" }, "Actions that gadgets submit through your gatekeeper accounts wait here for you."), table);
}
