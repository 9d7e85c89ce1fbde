// The live console of every gadget in the workspace (subscribeConsole).
import { h, replace } from "../dom.js";

const MAX_LINES = 500;

export async function renderConsole(el, ctx) {
  const log = h("div", { class: "console", id: "console-log" });
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
  const sub = await ctx.ws.subscribeConsole(add);
  ctx.onCleanup(() => sub.cancel().catch(() => {}));
  replace(
    el,
    h("div", { class: "toolbar" },
      h("span", { class: "muted" }, "Console lines of every gadget, as they are written."),
      h("button", { class: "small", text: "Clear", onclick: () => replace(log) })),
    log,
  );
}
