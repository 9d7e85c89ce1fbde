// The workspace's audit log (build role), newest first: a page at a time, older pages on
// demand. Who and what are filtered by the server over the whole log the workspace keeps;
// the text search looks through the loaded lines.
import { h, replace, attempt, when } from "../dom.js";

/** Lines per page. */
export const AUDIT_PAGE = 50;

export async function renderAudit(el, ctx) {
  const { ws } = ctx;
  const actor = h("input", { name: "actor", id: "audit-actor", placeholder: "anyone (e.g. ada, gadget:todo)", size: 18 });
  const action = h("input", { name: "action", id: "audit-action", placeholder: "any action (e.g. gadget.)", size: 18 });
  const search = h("input", { name: "q", id: "audit-search", type: "search", placeholder: "target or detail contains…" });
  const table = h("div", { id: "audit-lines" });
  const status = h("p", { class: "muted", id: "audit-status" });
  const older = h("button", { id: "audit-older", text: "Older lines" });
  let entries = [];
  let complete = false;
  // Each change of who or what starts a new generation; a page loaded for an older one is
  // dropped, so quick changes never mix their lines.
  let generation = 0;

  /** The server's filter of the current choice, with the page's cursor. */
  const filter = (before) => ({ actor: actor.value.trim(), action: action.value.trim(), before });
  /** Loads the next page (or the first, when entries is empty). */
  const load = async () => {
    const gen = generation;
    const before = entries.length ? entries[entries.length - 1].seq : 0;
    const page = await ws.auditLog(AUDIT_PAGE, filter(before));
    if (gen !== generation) return;
    entries = entries.concat(page);
    complete = page.length < AUDIT_PAGE;
  };
  const draw = () => {
    const q = search.value.trim().toLowerCase();
    const shown = entries.filter((e) => !q || `${e.target} ${e.detail}`.toLowerCase().includes(q));
    const filtered = actor.value.trim() || action.value.trim();
    replace(
      table,
      shown.length === 0
        ? h("p", { class: "muted", id: "no-audit" },
            entries.length === 0
              ? filtered ? "No line matches who and what." : "Nothing recorded yet."
              : "No loaded line contains that text; load older lines or clear the search.")
        : h("table", { class: "list", id: "audit" },
            h("thead", null, h("tr", null, ["#", "Time", "Who", "What", "Target", "Detail"].map((t) => h("th", null, t)))),
            h("tbody", null,
              shown.map((e) =>
                h("tr", { dataset: { seq: e.seq, action: e.action, actor: e.actor } },
                  h("td", null, String(e.seq)),
                  h("td", null, when(e.time)),
                  h("td", null, e.actor),
                  h("td", { class: "mono" }, e.action),
                  h("td", { class: "mono url" }, e.target),
                  h("td", { class: "url" }, e.detail))))),
    );
    older.hidden = complete;
    const matching = filtered ? " matching" : "";
    const found = shown.length < entries.length ? `, ${shown.length} contain the text` : "";
    status.textContent = complete
      ? `All ${entries.length}${matching} lines the workspace keeps are loaded${found}.`
      : `The newest ${entries.length}${matching} lines are loaded${found}.`;
  };
  /** Runs step (which may load) with the Older button disabled, then draws. */
  const busy = (step) =>
    attempt(async () => {
      older.disabled = true;
      try {
        await step();
        draw();
      } finally {
        older.disabled = false;
      }
    });
  const reload = () =>
    busy(async () => {
      generation++;
      entries = [];
      await load();
    });
  older.addEventListener("click", () => busy(load));
  for (const f of [actor, action]) f.addEventListener("change", reload);
  search.addEventListener("input", draw);
  await load();
  draw();
  replace(
    el,
    h("h3", null, "Audit log"),
    h("p", { class: "muted" }, "Who changed what in this workspace, newest first. Who (exact) and what (the start of the action) search the whole log; the text search looks through the loaded lines."),
    h("div", { class: "toolbar", id: "audit-filters" },
      h("label", null, h("span", { class: "muted" }, "Who "), actor),
      h("label", null, h("span", { class: "muted" }, "What "), action),
      search),
    table,
    h("div", { class: "toolbar" }, older, status),
  );
}
