// The workspace's chat panel, beside its gadgets: the chats (new, rename, delete), a model
// picker for a new chat, and the open chat with its streaming log, its draft, Stop/Retry and
// the composer.
import { h, replace, attempt, toast, errorNode } from "../dom.js";
import { ChatLog } from "./chatlog.js";
import { draftCard, draftEmpty, dryRunCard, dryRunOf, connectionCard } from "./chatreview.js";

// What a run's end says, by its reason (an "end" says nothing).
const DONE = { stopped: "The agent was stopped.", waiting: "The agent waits for you.", turns: "The agent stopped: it used all its turns." };

// The chat open in each workspace (by workspace id), kept while the person moves between tabs.
const opened = new Map();

/** Renders the chat panel of a workspace into el. */
export async function renderChatPanel(el, ctx) {
  const { ws, api, wsId } = ctx;
  const list = h("ul", { class: "chat-list", id: "chat-list" });
  const body = h("div", { class: "chat-body" });
  let sub = null; // the open chat's subscription
  ctx.onCleanup(() => sub && sub.cancel().catch(() => {}));
  const models = await api.listModels().catch(() => []);

  const drawList = async () => {
    const chats = await ws.listChats();
    const current = opened.get(wsId);
    replace(list, chats.length === 0 ? h("li", { class: "muted" }, "No chats yet.") : chats.map((c) =>
      h("li", { class: c.id === current ? "active" : "", dataset: { chat: c.id } },
        h("a", { href: "#", class: "chat-title", onclick: (ev) => {
          ev.preventDefault();
          attempt(() => open(c.id));
        } }, c.title || "(untitled)"),
        c.running ? h("span", { class: "state pending" }, "running") : null,
        c.waiting ? h("span", { class: "state pending" }, `waits: ${c.waiting}`) : null,
        h("button", { class: "small chat-rename", text: "Rename", onclick: () => attempt(async () => {
          const title = prompt("New title", c.title);
          if (title === null) return;
          await ws.setChatTitle(c.id, title);
          await drawList();
        }) }),
        h("button", { class: "small danger chat-delete", text: "Delete", onclick: () => attempt(async () => {
          if (!confirm(`Delete the chat "${c.title}"?`)) return;
          await ws.deleteChat(c.id);
          if (opened.get(wsId) === c.id) await open(null);
          else await drawList();
        }) }))));
  };

  // open shows chat id (null: a new chat) and follows its events. A chat opened while an
  // earlier one still loads replaces it: the earlier one's subscription is cancelled at once.
  let opening = 0;
  const open = async (id) => {
    const mine = ++opening;
    if (sub) sub.cancel().catch(() => {});
    sub = null;
    if (id) opened.set(wsId, id);
    else opened.delete(wsId);
    await drawList();
    const keep = (s) => (mine === opening ? (sub = s) : s.cancel().catch(() => {}));
    const shown = id ? await openChat(ctx, id, keep, drawList) : newChat(ctx, models, open);
    if (mine === opening) replace(body, shown);
  };

  replace(el,
    h("div", { class: "chat-head" },
      h("h2", null, "Chats"),
      h("button", { class: "small", id: "chat-new", text: "New chat", onclick: () => attempt(() => open(null)) }),
      h("a", { href: "#/models", class: "small" }, "Models")),
    list,
    body);
  await open(opened.get(wsId) || null).catch((err) => {
    opened.delete(wsId);
    toast(errorNode(err), "error");
    return open(null);
  });
}

/** The composer of a chat not yet started: a model (or none) and its first message. */
function newChat(ctx, models, open) {
  const pick = h("select", { id: "chat-model" },
    models.map((m) => h("option", { value: m.id }, `${m.name} (${m.model})`)),
    h("option", { value: "" }, "no model: people only"));
  return h("div", { class: "chat-new" },
    models.length === 0 ? h("p", { class: "muted" }, "No models yet: add one under Models to chat with an agent.") : null,
    h("label", { class: "model-pick" }, h("span", null, "Model "), pick),
    composer("Ask the agent, e.g. “make me a to-do gadget”", async (text) => {
      const info = await ctx.ws.newChat(text, pick.value || null);
      await open(info.id);
    }));
}

/** A message box whose Send runs send(text). */
function composer(placeholder, send) {
  const text = h("textarea", { id: "chat-input", rows: 3, placeholder });
  const button = h("button", { type: "submit", id: "chat-send", text: "Send" });
  const f = h("form", { class: "composer" }, text, button);
  const submit = async () => {
    if (!text.value.trim()) return;
    button.disabled = true;
    try {
      await attempt(async () => {
        await send(text.value);
        text.value = "";
      });
    } finally {
      button.disabled = false;
    }
  };
  f.addEventListener("submit", (ev) => {
    ev.preventDefault();
    submit();
  });
  text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) {
      ev.preventDefault();
      submit();
    }
  });
  return f;
}

/** A button that loads the page of messages before the oldest shown, while there are more. */
function olderButton(ws, id, log, first) {
  let oldest = first.length ? first[0].id : undefined;
  const b = h("button", { class: "small", id: "chat-older", text: "Show older messages" });
  b.addEventListener("click", () => attempt(async () => {
    const page = await ws.getChatHistory(id, oldest);
    log.older(page.messages);
    if (page.messages.length) oldest = page.messages[0].id;
    b.hidden = !page.more;
  }));
  return b;
}

/** The open chat: its log, draft, Stop/Retry and composer; keep receives the subscription. */
async function openChat(ctx, id, keep, drawList) {
  const { ws } = ctx;
  const log = new ChatLog();
  const draftEl = h("div", { id: "draft-area" });
  const status = h("span", { class: "chat-status muted", id: "chat-status" });
  const stop = h("button", { class: "small danger", id: "chat-stop", text: "Stop", onclick: () => attempt(() => ws.stopAgent(id)) });
  const retry = h("button", { class: "small", id: "chat-retry", text: "Retry", onclick: () => attempt(() => ws.retryAgent(id)) });
  const title = h("h3", { class: "chat-name" });
  // A dry run shows once, from its event or its tool message (an event may come before this
  // page subscribed). From the history, only the latest one since the person last wrote, if it
  // has not expired, may still be held.
  const dryShown = new Set();
  let lastDry = null;
  const showDryRun = (d) => {
    if (dryShown.has(d.id)) return;
    dryShown.add(d.id);
    log.card(dryRunCard(ctx, d));
  };
  const message = (m, live) => {
    const d = dryRunOf(m);
    if (d && live) showDryRun(d);
    else if (d) lastDry = d;
    else if (m.role === "user") lastDry = null;
    log.message(m);
  };
  const showInfo = (info) => {
    title.textContent = info.title || "(untitled)";
    status.textContent = info.running ? "the agent is working…" : info.waiting ? `waiting for: ${info.waiting}` : "";
    stop.hidden = !info.running;
    retry.hidden = info.running || !info.modelId;
  };
  // A connection request shows once, whether the live event or getChat (after a reload)
  // brought it.
  const asked = new Set();
  const showConnection = (req) => {
    if (asked.has(req.id)) return;
    asked.add(req.id);
    attempt(async () => log.card(await connectionCard(ctx, id, req)));
  };
  const showDraft = (d) => replace(draftEl, draftEmpty(d) ? null : draftCard(ctx, id, d));
  const onEvent = (ev) => {
    switch (ev.type) {
      case "message":
        message(ev.message, true);
        break;
      case "delta":
        log.delta(ev.text);
        break;
      case "tool_started":
        log.toolStarted(ev.tool);
        break;
      case "tool_finished":
        log.toolOutput(ev.tool);
        break;
      case "proposed_change":
        if (ev.draft) showDraft(ev.draft);
        if (ev.dryRun) showDryRun(ev.dryRun);
        break;
      case "approval_needed":
        if (ev.connection) showConnection(ev.connection);
        else log.notice("A gatekeeper action waits for approval (see Approvals).", "info");
        break;
      case "error":
        log.notice(ev.text, "error");
        attempt(async () => showInfo(await ws.getChat(id)));
        break;
      case "done":
        if (DONE[ev.text]) log.notice(DONE[ev.text], "info");
        attempt(async () => showInfo(await ws.getChat(id)));
        break;
      case "status":
        if (ev.info) showInfo(ev.info);
        attempt(drawList);
        break;
    }
  };
  // Events that arrive while the history loads wait for it (messages are shown once by id).
  let early = [];
  const s = await ws.subscribeChat(id, (ev) => (early ? early.push(ev) : onEvent(ev)));
  keep(s);
  const [info, hist, draft] = await Promise.all([ws.getChat(id), ws.getChatHistory(id), ws.getDraft(id).catch(() => null)]);
  for (const m of hist.messages) message(m, false);
  if (lastDry && new Date(lastDry.expires) > new Date()) showDryRun(lastDry);
  showInfo(info);
  for (const req of info.connections ?? []) showConnection(req);
  showDraft(draft);
  for (const ev of early) onEvent(ev);
  early = null;
  return h("div", { class: "chat-open", dataset: { chat: id } },
    h("div", { class: "chat-title-bar" }, title, status, stop, retry),
    hist.more ? olderButton(ws, id, log, hist.messages) : null,
    log.el,
    draftEl,
    composer("Reply…", (text) => ws.sendChatMessage(id, text)));
}
