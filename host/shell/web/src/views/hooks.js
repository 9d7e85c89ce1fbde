// Hooks (build role): a gatekeeper calling a gadget back. A gadget registers a hook (one of its
// own methods, for an event of a gatekeeper it is bound to); the host fires it on a webhook, a
// poll or a notification, as the person who registered it. Listed here with Remove.
import { h, replace, attempt, toast, when } from "../dom.js";

/** What each source of events means, in a few words. */
const SOURCES = {
  webhook: "webhook: the service posts to the URL",
  poll: "poll: the gatekeeper asks the service",
  notify: "notify: the service notifies the gatekeeper",
};

/** Whether a hook's params (JSON text) say anything: not empty, {} or null. */
function hasParams(params) {
  return Boolean(params) && !["{}", "null"].includes(params.replace(/\s/g, ""));
}

/** Copies text to the clipboard, or selects it in el for the person to copy. */
async function copy(text, el) {
  try {
    await navigator.clipboard.writeText(text);
    toast("copied the hook's URL");
  } catch {
    getSelection().selectAllChildren(el);
    toast("the clipboard is not available here: the URL is selected, copy it with Ctrl+C");
  }
}

/** A webhook's URL (the service posts there), whole and selectable, with a Copy button. */
function urlCell(hk) {
  if (hk.source !== "webhook" || !hk.url) return h("td", { class: "url muted", dataset: { label: "URL" } }, "none (not a webhook)");
  const url = h("div", { class: "mono hook-url" }, hk.url);
  return h("td", { class: "url", dataset: { label: "URL" } }, url, h("button", { class: "small plain copy", type: "button", text: "Copy", "aria-label": `Copy the URL of hook ${hk.id}`, onclick: () => copy(hk.url, url) }));
}

export async function renderHooks(el, ctx) {
  const { ws } = ctx;
  const hooks = await ws.listHooks();
  replace(
    el,
    h("h3", null, "Hooks"),
    h("p", { class: "muted" }, "A hook lets a gatekeeper call a gadget back: when the event happens at the service, the host calls the gadget's method with the event, as the person who registered the hook and with the gadget's grants. A hook goes when its gadget, its binding or the account goes."),
    hooks.length === 0
      ? h("div", { id: "no-hooks" },
          h("p", { class: "muted" }, "No hooks in this workspace."),
          h("p", { class: "muted" },
            "A gadget registers one itself: with the grant atelier:host/hooks it calls ",
            h("code", null, "register(binding, event, method, params)"),
            " for an event of a gatekeeper it is bound to (the events are the \"hooks\" of the gatekeeper's manifest). Or, from a terminal: ",
            h("code", null, "atelier hook add GADGET BINDING EVENT METHOD"), "."))
      : h("table", { class: "list", id: "hooks" },
          h("thead", null, h("tr", null, ["Event", "Calls", "Source", "URL", "Fires", "Last fire", "By", ""].map((t) => h("th", null, t)))),
          h("tbody", null,
            hooks.map((hk) => {
              const gadget = hk.gadgetName || hk.gadget;
              return h("tr", { dataset: { hook: hk.id, gadget, event: hk.event, method: hk.method } },
                h("td", { class: "event", dataset: { label: "Event" } }, h("span", { class: "mono name" }, hk.event),
                  h("div", { class: "muted" }, `via binding ${hk.binding}${hk.gatekeeper && hk.gatekeeper !== hk.binding ? ` of ${hk.gatekeeper}` : ""}`),
                  hasParams(hk.params) ? h("div", { class: "muted mono params" }, hk.params) : null),
                h("td", { class: "mono call", dataset: { label: "Calls" } }, `${gadget}.${hk.method}`),
                h("td", { class: "source", dataset: { label: "Source" }, title: SOURCES[hk.source] || "" }, hk.source),
                urlCell(hk),
                h("td", { class: "fires", dataset: { label: "Fires" } }, String(hk.fires || 0)),
                h("td", { class: "last", dataset: { label: "Last fire" } }, hk.fires > 0 && hk.lastFire ? when(hk.lastFire) : h("span", { class: "muted" }, "not yet"),
                  hk.lastError ? h("div", { class: "notice error last-error" }, hk.lastError) : null),
                h("td", { dataset: { label: "By" } }, hk.creator),
                h("td", { class: "actions" },
                  h("button", { class: "small danger remove", text: "Remove", onclick: () => attempt(async () => {
                    if (!confirm(`Remove the hook ${hk.event} → ${gadget}.${hk.method}? It fires no more${hk.url ? " and its URL stops working" : ""}; the gadget has to register it again to get it back.`)) return;
                    await ws.removeHook(hk.id);
                    toast(`removed the hook ${hk.event} → ${gadget}.${hk.method}`);
                    ctx.refresh();
                  }) })));
            }))),
  );
}
