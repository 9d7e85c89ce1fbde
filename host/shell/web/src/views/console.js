// Console lines as they are written: every gadget's in the workspace's Console tab
// (subscribeConsole), one gadget's on its page (gadget.logs).
import { h, replace } from "../dom.js";

const MAX_LINES = 500;

/**
 * A live console: subscribe(cb) starts the subscription that calls cb(line) for each console
 * line; it is cancelled with the view. Returns {log, clear}: the lines' element (id logId) and
 * a Clear button.
 */
export async function liveConsole(ctx, subscribe, logId) {
  const log = h("div", { class: "console", id: logId });
  const add = (line) => {
    const t = line.time ? new Date(line.time) : new Date();
    log.append(
      h("div", { class: `line ${line.level || line.stream || ""}` },
        h("span", { class: "time" }, isNaN(t) ? "" : t.toLocaleTimeString()),
        h("span", { class: "who" }, line.gadget),
        h("span", { class: "level" }, line.level || line.stream),
        h("span", { class: "text" }, line.text)),
    );
    while (log.childElementCount > MAX_LINES) log.firstElementChild.remove();
    log.scrollTop = log.scrollHeight;
  };
  const sub = await subscribe(add);
  ctx.onCleanup(() => sub.cancel().catch(() => {}));
  return { log, clear: h("button", { class: "small", type: "button", text: "Clear", onclick: () => replace(log) }) };
}

export async function renderConsole(el, ctx) {
  const { log, clear } = await liveConsole(ctx, (cb) => ctx.ws.subscribeConsole(cb), "console-log");
  replace(
    el,
    h("div", { class: "toolbar" }, h("span", { class: "muted" }, "Console lines of every gadget, as they are written."), clear),
    log,
  );
}
