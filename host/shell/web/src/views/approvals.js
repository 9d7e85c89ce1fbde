// The gatekeeper action log of a workspace: pending actions are approved or rejected live.
import { h, replace, attempt, json } from "../dom.js";

export async function renderApprovals(el, ctx) {
  const { ws } = ctx;
  const table = h("div", { id: "actions" });
  const draw = (actions) =>
    replace(
      table,
      actions.length === 0
        ? h("p", { class: "muted" }, "No gatekeeper actions or observations yet.")
        : h("table", { class: "list" },
            h("thead", null, h("tr", null, ["#", "State", "Caller", "Account", "What", ""].map((t) => h("th", null, t)))),
            h("tbody", null,
              actions
                .slice()
                .reverse()
                .map((a) =>
                  h("tr", { dataset: { action: a.id, state: a.state } },
                    h("td", null, a.id),
                    h("td", null, h("span", { class: `state ${a.state}` }, a.state), a.autoApproved ? " (auto)" : ""),
                    h("td", null, a.caller),
                    h("td", null, a.account, h("div", { class: "muted mono" }, a.resource)),
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
  draw(await ws.listActions());
  const sub = await ws.subscribeActions((ev) => draw(ev.actions));
  ctx.onCleanup(() => sub.cancel().catch(() => {}));
  replace(el, h("p", { class: "muted" }, "Actions that gadgets submit through your gatekeeper accounts wait here for you."), table);
}
