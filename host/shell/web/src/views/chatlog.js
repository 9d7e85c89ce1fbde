// The log of an open chat: stored messages, the agent's reply streaming in as deltas, tool
// calls folded open/closed with their arguments and output, notices. Every text is set with
// textContent: chat text and tool output are untrusted.
import { h, when } from "../dom.js";

/** Pretty-prints a tool call's JSON arguments (as they came when they are not JSON). */
function argsText(args) {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args || "";
  }
}

export class ChatLog {
  constructor() {
    this.el = h("div", { class: "chat-log", id: "chat-log", "aria-live": "polite" });
    this.seen = new Set(); // ids of the messages shown
    this.tools = new Map(); // tool call id -> its <details>
    this.streaming = null; // the bubble the current deltas go into
  }

  add(node) {
    const stick = this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 40;
    this.el.append(node);
    if (stick) this.el.scrollTop = this.el.scrollHeight;
    return node;
  }

  /** Shows a stored message once (history and live events both bring them). */
  message(m) {
    if (this.seen.has(m.id)) return;
    this.seen.add(m.id);
    switch (m.role) {
      case "assistant":
        this.assistant(m);
        break;
      case "tool":
        this.toolOutput({ id: m.toolCallId, name: m.toolName, output: m.text, isError: m.isError });
        break;
      case "notice":
        this.notice(m.text, "info");
        break;
      default:
        this.add(h("div", { class: `msg ${m.role}`, dataset: { id: m.id } },
          h("div", { class: "who" }, m.role === "summary" ? "summary of the earlier messages" : m.author, h("span", { class: "muted" }, ` ${when(m.time)}`)),
          h("div", { class: "text" }, m.text)));
    }
  }

  assistant(m) {
    let bubble = this.streaming;
    this.streaming = null;
    if (m.text) {
      if (!bubble) bubble = this.add(this.bubble());
      bubble.querySelector(".text").textContent = m.text;
      bubble.dataset.id = m.id;
    } else if (bubble) {
      bubble.remove();
    }
    for (const c of m.toolCalls || []) this.toolStarted({ id: c.id, name: c.name, args: c.args });
  }

  bubble() {
    return h("div", { class: "msg assistant" }, h("div", { class: "who" }, "agent"), h("div", { class: "text" }));
  }

  /** Shows older messages (a page of the history) above the ones shown. */
  older(messages) {
    const shown = [...this.el.childNodes];
    const streaming = this.streaming;
    this.el.textContent = "";
    this.streaming = null;
    for (const m of messages) this.message(m);
    this.el.append(...shown);
    this.streaming = streaming;
  }

  /** Appends a piece of the agent's reply as it streams. */
  delta(text) {
    if (!this.streaming) this.streaming = this.add(this.bubble());
    this.streaming.querySelector(".text").append(text);
    this.el.scrollTop = this.el.scrollHeight;
  }

  /** Shows a tool call (once per id), folded, with its arguments. */
  toolStarted(t) {
    if (this.tools.has(t.id)) return this.tools.get(t.id);
    this.streaming = null;
    const d = this.add(
      h("details", { class: "tool running", dataset: { tool: t.name, id: t.id } },
        h("summary", null, h("span", { class: "tool-name" }, t.name), h("span", { class: "tool-state muted" }, " running…")),
        h("div", { class: "muted" }, "arguments"),
        h("pre", { class: "output small args" }, argsText(t.args)),
        h("pre", { class: "output small result" })),
    );
    this.tools.set(t.id, d);
    return d;
  }

  /** Fills in a tool call's output. */
  toolOutput(t) {
    const d = this.toolStarted(t);
    d.classList.remove("running");
    d.classList.toggle("failed", !!t.isError);
    d.querySelector(".tool-state").textContent = t.isError ? " failed" : " done";
    const out = d.querySelector(".result");
    out.textContent = t.output || "";
    out.classList.toggle("error", !!t.isError);
  }

  /** A host's note: kind "info" or "error". */
  notice(text, kind) {
    this.streaming = null;
    return this.add(h("div", { class: `notice ${kind}`, role: kind === "error" ? "alert" : null }, text));
  }

  /** A card (a dry run, a connection request) placed in the flow of the chat. */
  card(node) {
    this.streaming = null;
    return this.add(node);
  }
}
