// A workspace: the chat panel beside tabs for its gadgets, bindings, sharing, approvals,
// schedules, hooks, console, Code Mode and metrics; tabs and controls follow the caller's role.
import { h, replace, errorNode } from "../dom.js";
import { renderGadgets } from "./gadgets.js";
import { renderGadget } from "./gadget.js";
import { renderBindings } from "./bindings.js";
import { renderSharing } from "./sharing.js";
import { renderApprovals } from "./approvals.js";
import { renderConsole } from "./console.js";
import { renderCode } from "./code.js";
import { renderMetrics } from "./metrics.js";
import { renderChatPanel } from "./chat.js";
import { renderRules } from "./rules.js";
import { renderBlueprints } from "./blueprints.js";
import { renderSchedules } from "./schedules.js";
import { renderHooks } from "./hooks.js";
import { renderAudit } from "./audit.js";
import { unmetRequirements, renderObserverPanel } from "./observers.js";

const RANK = { use: 0, build: 1, owner: 2 };

/** [id, label, least role, render] */
const TABS = [
  ["gadgets", "Gadgets", "use", renderGadgets],
  ["bindings", "Bindings", "build", renderBindings],
  ["sharing", "Sharing", "use", renderSharing],
  ["approvals", "Approvals", "use", renderApprovals],
  ["rules", "Auto-approve", "use", renderRules],
  ["blueprints", "Blueprints", "use", renderBlueprints],
  ["schedules", "Schedules", "build", renderSchedules],
  ["hooks", "Hooks", "build", renderHooks],
  ["console", "Console", "build", renderConsole],
  ["code", "Code Mode", "use", renderCode],
  ["metrics", "Metrics", "use", renderMetrics],
  ["audit", "Audit log", "build", renderAudit],
];

/** Tabs for people only: agents have no auto-approve rules. */
const PEOPLE_ONLY = new Set(["rules"]);

/** Renders #/w/ID/TAB or, with params.gadget, #/w/ID/g/NAME. */
export async function renderWorkspace(el, ctx, params) {
  const ws = ctx.api.openWorkspace(params.id);
  const info = await ws.info();
  // A collaborator who has not shown they can read the workspace's data themselves picks their
  // accounts first (observers.js); the workspace opens once they have.
  const unmet = await unmetRequirements(ws, info.role);
  if (unmet.length) return renderObserverPanel(el, ctx, info, ws, unmet, () => renderWorkspace(el, ctx, params));
  const wctx = { ...ctx, ws, role: info.role, wsId: info.id, name: params.gadget };
  const tabs = TABS.filter(([id, , least]) => RANK[info.role] >= RANK[least] && (ctx.conn.user.kind === "user" || !PEOPLE_ONLY.has(id)));
  const active = params.gadget ? "gadgets" : tabs.some(([id]) => id === params.tab) ? params.tab : "gadgets";
  const body = h("div", { class: "tab-body", id: `tab-${params.gadget ? "gadget" : active}` });
  // Chats are for people: an agent's token reaches none.
  const chat = ctx.conn.user.kind === "user" ? h("aside", { class: "chat-panel", id: "chat-panel" }) : null;
  replace(
    el,
    h("div", { class: "ws-head" },
      h("h1", null, h("a", { href: `#/w/${info.id}` }, info.name)),
      h("span", { class: `role ${info.role}`, id: "ws-role" }, info.role),
      h("span", { class: "muted" }, ` owned by ${info.owner}`)),
    h("div", { class: chat ? "ws-layout" : "ws-layout no-chat" },
      chat,
      h("div", { class: "ws-main" },
        h("nav", { class: "tabs" },
          tabs.map(([id, label]) => h("a", { href: `#/w/${info.id}/${id}`, class: id === active ? "active" : "", dataset: { tab: id } }, label))),
        body)),
  );
  // On a narrow screen the tab bar scrolls sideways: bring the open tab into it.
  const open = el.querySelector("nav.tabs a.active");
  if (open) open.parentElement.scrollLeft += open.getBoundingClientRect().left - open.parentElement.getBoundingClientRect().left - 12;
  // The chat panel failing (an older server) leaves the gadgets usable.
  const chatDone = chat && renderChatPanel(chat, wctx).catch((err) => replace(chat, h("p", { class: "notice error" }, "Chats unavailable: ", errorNode(err))));
  await Promise.all([params.gadget ? renderGadget(body, wctx) : tabs.find(([id]) => id === active)[3](body, wctx), chatDone]);
}
