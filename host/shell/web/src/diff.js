// Unified diffs and dry-run diffs as DOM, built with textContent only: the text comes from
// an agent and from gadget data, so none of it is ever parsed as HTML.
import { h } from "./dom.js";

/** The class of one line of a unified diff. */
function lineClass(line) {
  if (line.startsWith("+++") || line.startsWith("---")) return "file";
  if (line.startsWith("@@")) return "hunk";
  if (line.startsWith("+")) return "add";
  if (line.startsWith("-")) return "del";
  return "ctx";
}

/** A unified diff's text as a block of lines, added ones green and removed ones red. */
export function unifiedDiff(text) {
  const lines = (text || "").replace(/\n$/, "").split("\n");
  return h("pre", { class: "diff" }, lines.map((l) => h("span", { class: `dl ${lineClass(l)}` }, `${l}\n`)));
}

/** One file of a draft: its name and status, its diff folded open. */
export function draftFile(f) {
  return h("details", { class: "draft-file", open: true, dataset: { gadget: f.gadget, file: f.file, status: f.status } },
    h("summary", null, h("span", { class: `status ${f.status}` }, f.status), ` ${f.gadget}/${f.file}`),
    unifiedDiff(f.diff));
}

// value shows one side of a key change: absent, text, or base64 marked as binary.
function value(v, binary) {
  if (v === null || v === undefined) return h("span", { class: "muted" }, "(absent)");
  return h("code", { class: binary ? "binary" : "" }, binary ? `base64:${v}` : v);
}

/** The kv changes a dry run made to one gadget: added, changed and removed keys. */
function gadgetChanges(g) {
  const rows = [
    ...(g.added || []).map((c) => ["added", c]),
    ...(g.changed || []).map((c) => ["changed", c]),
    ...(g.removed || []).map((c) => ["removed", c]),
  ];
  return h("div", { class: "dry-gadget", dataset: { gadget: g.gadget } },
    h("h4", null, g.gadget),
    h("table", { class: "list kv" },
      h("thead", null, h("tr", null, ["", "Key", "Old", "New"].map((t) => h("th", null, t)))),
      h("tbody", null, rows.map(([kind, c]) =>
        h("tr", { class: kind, dataset: { key: c.key } },
          h("td", null, h("span", { class: `status ${kind}` }, kind)),
          h("td", null, h("code", null, c.key)),
          h("td", { class: "del" }, value(c.old, c.binary)),
          h("td", { class: "add" }, value(c.new, c.binary)))))));
}

/** What a dry run would change: per gadget its keys, per gatekeeper the would-be actions. */
export function dryRunDiff(d) {
  const actions = d.actions || [];
  return h("div", { class: "dry-diff" },
    (d.gadgets || []).map(gadgetChanges),
    actions.length === 0
      ? null
      : h("div", { class: "dry-actions" },
          h("h4", null, "Would-be gatekeeper actions"),
          h("ul", null, actions.map((a) =>
            h("li", null, h("strong", null, `${a.gatekeeper}.${a.method}`), ` via ${a.binding} (account ${a.account})`, h("pre", { class: "output small" }, a.args))))));
}
