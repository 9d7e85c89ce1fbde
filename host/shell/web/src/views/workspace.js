// A workspace: tabs for its gadgets, bindings, sharing, approvals, console, Code Mode and
// metrics; tabs and controls follow the caller's role.
import { h, replace } from "../dom.js";
import { renderGadgets } from "./gadgets.js";
import { renderGadget } from "./gadget.js";
import { renderBindings } from "./bindings.js";
import { renderSharing } from "./sharing.js";
import { renderApprovals } from "./approvals.js";
import { renderConsole } from "./console.js";
import { renderCode } from "./code.js";
import { renderMetrics } from "./metrics.js";

const RANK = { use: 0, build: 1, owner: 2 };

/** [id, label, least role, render] */
const TABS = [
  ["gadgets", "Gadgets", "use", renderGadgets],
  ["bindings", "Bindings", "build", renderBindings],
  ["sharing", "Sharing", "use", renderSharing],
  ["approvals", "Approvals", "use", renderApprovals],
  ["console", "Console", "build", renderConsole],
  ["code", "Code Mode", "use", renderCode],
  ["metrics", "Metrics", "use", renderMetrics],
];

/** Renders #/w/ID/TAB or, with params.gadget, #/w/ID/g/NAME. */
export async function renderWorkspace(el, ctx, params) {
  const ws = ctx.api.openWorkspace(params.id);
  const info = await ws.info();
  const wctx = { ...ctx, ws, role: info.role, wsId: info.id, name: params.gadget };
  const tabs = TABS.filter(([, , least]) => RANK[info.role] >= RANK[least]);
  const active = params.gadget ? "gadgets" : tabs.some(([id]) => id === params.tab) ? params.tab : "gadgets";
  const body = h("div", { class: "tab-body", id: `tab-${params.gadget ? "gadget" : active}` });
  replace(
    el,
    h("div", { class: "ws-head" },
      h("h1", null, h("a", { href: `#/w/${info.id}` }, info.name)),
      h("span", { class: `role ${info.role}`, id: "ws-role" }, info.role),
      h("span", { class: "muted" }, ` owned by ${info.owner}`)),
    h("nav", { class: "tabs" },
      tabs.map(([id, label]) => h("a", { href: `#/w/${info.id}/${id}`, class: id === active ? "active" : "", dataset: { tab: id } }, label))),
    body,
  );
  await (params.gadget ? renderGadget(body, wctx) : tabs.find(([id]) => id === active)[3](body, wctx));
}
