// The Atelier browser shell: one Cap'n Web session over the WebSocket at /api, a hash router
// and the views. See docs/gadget-ui.md for gadget UIs.
import "./shell.css";
import { Connection, State } from "./rpc.js";
import { h, replace, errorNode, attempt } from "./dom.js";
import { renderAuth, renderPasswordOffer } from "./views/auth.js";
import { renderWorkspaces } from "./views/workspaces.js";
import { renderWorkspace } from "./views/workspace.js";
import { renderAgents } from "./views/agents.js";
import { renderGatekeepers } from "./views/gatekeepers.js";
import { renderCluster } from "./views/cluster.js";
import { renderModels } from "./views/models.js";
import { renderAccount } from "./views/account.js";

const conn = new Connection(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api`);
const STATE_TEXT = { [State.CONNECTING]: "connecting…", [State.ONLINE]: "connected", [State.OFFLINE]: "offline, reconnecting…" };

const stateEl = h("span", { class: "conn", id: "conn-state" });
const userEl = h("span", { class: "user", id: "user" });
const navEl = h("nav", { class: "top" });
const mainEl = h("main", { id: "main" });

// view is the render that owns the page, with the cleanups of what it started (subscriptions).
// A render started while an earlier one still awaits replaces it: the earlier render keeps
// writing into its own container, now detached, and its late cleanups run at once.
let view = { cleanups: [] };
let shown = { epoch: -1, user: null };

function runCleanups(fns) {
  for (const fn of fns.splice(0)) {
    try {
      fn();
    } catch {
      // a cleanup of a dead session may fail; nothing to do
    }
  }
}

/** Parses the hash into a route; a malformed escape in it throws (URIError). */
function parseRoute() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  switch (parts[0]) {
    case "w":
      return parts[2] === "g" ? { view: "workspace", id: parts[1], gadget: parts[3] } : { view: "workspace", id: parts[1], tab: parts[2] };
    case "join":
      return { view: "join", id: parts[1], key: parts[2] };
    case "agents":
      return { view: "agents" };
    case "gatekeepers":
      return { view: "gatekeepers" };
    case "models":
      return { view: "models" };
    case "cluster":
      return { view: "cluster" };
    case "account":
      return { view: "account" };
    default:
      return { view: "workspaces" };
  }
}

async function render() {
  runCleanups(view.cleanups);
  const mine = { cleanups: [] };
  view = mine;
  shown = { epoch: conn.epoch, user: conn.user && conn.user.id };
  renderHeader();
  const el = h("div", { class: "view" });
  replace(mainEl, el);
  if (!conn.root) {
    replace(el, h("p", { class: "muted boot" }, "Connecting to the server…"));
    return;
  }
  const ctx = {
    conn,
    api: conn.api,
    onCleanup: (fn) => {
      mine.cleanups.push(fn);
      if (view !== mine) runCleanups(mine.cleanups); // this render was replaced meanwhile
    },
    refresh: () => render(),
  };
  if (!conn.api) {
    renderAuth(el, ctx);
    return;
  }
  const offer = renderPasswordOffer(ctx);
  if (offer) mainEl.prepend(offer);
  try {
    const route = parseRoute();
    mainEl.dataset.view = route.view;
    switch (route.view) {
      case "workspace":
        await renderWorkspace(el, ctx, route);
        break;
      case "join": {
        const info = await conn.api.openWorkspace(route.id, route.key).info();
        location.replace(`#/w/${info.id}`);
        break;
      }
      case "agents":
        await renderAgents(el, ctx);
        break;
      case "gatekeepers":
        await renderGatekeepers(el, ctx);
        break;
      case "cluster":
        await renderCluster(el, ctx);
        break;
      case "models":
        await renderModels(el, ctx);
        break;
      case "account":
        await renderAccount(el, ctx);
        break;
      default:
        await renderWorkspaces(el, ctx);
    }
  } catch (err) {
    mainEl.dataset.view = "error";
    replace(el, h("div", { class: "card error", id: "view-error" }, h("h2", null, "Could not show this page"), h("p", null, errorNode(err)), h("a", { href: "#/" }, "Back to your workspaces")));
  }
}

function renderHeader() {
  stateEl.dataset.state = conn.state;
  stateEl.textContent = STATE_TEXT[conn.state];
  stateEl.title = conn.state === State.ONLINE ? "" : conn.lastError;
  const u = conn.user;
  replace(
    navEl,
    u
      ? [
          h("a", { href: "#/" }, "Workspaces"),
          u.kind === "user" ? h("a", { href: "#/agents" }, "Agents") : null,
          h("a", { href: "#/gatekeepers" }, "Gatekeepers"),
          u.kind === "user" ? h("a", { href: "#/models", id: "nav-models" }, "Models") : null,
          conn.admin && conn.serverInfo && conn.serverInfo.cluster ? h("a", { href: "#/cluster", id: "nav-cluster" }, "Cluster") : null,
        ]
      : null,
  );
  replace(
    userEl,
    u ? [h("a", { href: "#/account", id: "account-link", title: "Your account: change your password" }, u.kind === "agent" ? `${u.owner}/agent:${u.username}` : u.username), h("button", { class: "small", id: "logout", text: "Log out", onclick: () => attempt(() => conn.logout()) })] : null,
  );
}

conn.addEventListener("change", () => {
  // A new session or another user re-renders the view (its stubs belong to the old session);
  // anything else (connecting, offline) only updates the header and keeps the view.
  const user = conn.user && conn.user.id;
  if (conn.state === State.ONLINE && (conn.epoch !== shown.epoch || user !== shown.user)) render();
  else renderHeader();
});
window.addEventListener("hashchange", () => render());

replace(
  document.getElementById("app"),
  h("header", { class: "bar" }, h("a", { class: "brand", href: "#/" }, "Atelier"), navEl, h("span", { class: "spacer" }), stateEl, userEl),
  mainEl,
);
render();
conn.start();
