// The notebook's browser UI (docs/gadget-ui.md): notes listed pinned-first, filtered by tag or
// text, edited in place, and kept live: every change the gadget publishes on "notes" ({kind,
// note}), from this tab, another person or an agent, updates the list at once.

const css = document.createElement("style");
css.textContent = `
  body { margin: 0; }
  .app { display: grid; grid-template-columns: 260px 1fr; height: 100vh; }
  aside { border-right: 1px solid #e3e6eb; display: flex; flex-direction: column; min-height: 0; }
  aside .top { padding: 10px; display: flex; gap: 6px; }
  input, textarea { font: inherit; padding: 6px 8px; border: 1px solid #c9ced6; border-radius: 6px; }
  aside input { flex: 1; min-width: 0; }
  button { font: inherit; padding: 4px 10px; border-radius: 6px; border: 1px solid #2f6fde; background: #2f6fde; color: #fff; cursor: pointer; }
  button.quiet { background: #fff; color: #2f6fde; }
  button.danger { background: #fff; color: #c92a2a; border-color: #e3a0a0; }
  .tags { padding: 0 10px 8px; display: flex; flex-wrap: wrap; gap: 4px; }
  .tag { font-size: 11px; padding: 1px 7px; border-radius: 9px; background: #e9ecef; cursor: pointer; border: 0; color: #1d2330; }
  .tag.on { background: #2f6fde; color: #fff; }
  ul { list-style: none; margin: 0; padding: 0; overflow: auto; flex: 1; }
  li { padding: 8px 10px; border-top: 1px solid #eef0f3; cursor: pointer; }
  li.sel { background: #eef4ff; }
  li .t { font-weight: 600; }
  li .b { color: #667085; font-size: 12px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  main { padding: 12px 16px; display: flex; flex-direction: column; gap: 8px; min-height: 0; }
  main textarea { flex: 1; min-height: 160px; resize: none; }
  .row { display: flex; gap: 8px; align-items: center; }
  .row input[type=text] { flex: 1; }
  .muted { color: #667085; font-size: 12px; }`;
document.head.append(css);

const el = (tag, props = {}, ...children) => {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
};
const on = (e, type, fn) => (e.addEventListener(type, fn), e);

/** The notes by id, as the gadget last reported them. */
const notes = new Map();
let selected = null; // id of the note in the editor
let tagFilter = null;

const search = el("input", { type: "text", id: "note-search", placeholder: "Search" });
const newButton = el("button", { id: "new-note", textContent: "New" });
const tagBar = el("div", { className: "tags" });
const list = el("ul", { id: "notes" });
const title = el("input", { type: "text", id: "note-title", placeholder: "Title" });
const tags = el("input", { type: "text", id: "note-tags", placeholder: "tags, comma separated" });
const pinned = el("input", { type: "checkbox", id: "note-pinned" });
const body = el("textarea", { id: "note-body", placeholder: "Write in markdown…" });
const save = el("button", { id: "save-note", textContent: "Save" });
const remove = el("button", { className: "danger", id: "remove-note", textContent: "Delete" });
const status = el("span", { className: "muted" });
document.body.append(
  el("div", { className: "app" },
    el("aside", {}, el("div", { className: "top" }, search, newButton), tagBar, list),
    el("main", {},
      el("div", { className: "row" }, title, el("label", { className: "muted" }, pinned, " pinned")),
      tags, body,
      el("div", { className: "row" }, save, remove, status))),
);

const byDisplayOrder = (a, b) => Number(b.pinned) - Number(a.pinned) || (a.updated < b.updated ? 1 : a.updated > b.updated ? -1 : 0);

function visible() {
  const q = search.value.trim().toLowerCase();
  return [...notes.values()]
    .filter((n) => tagFilter === null || n.tags.includes(tagFilter))
    .filter((n) => !q || [n.title, n.body, ...n.tags].some((s) => s.toLowerCase().includes(q)))
    .sort(byDisplayOrder);
}

function draw() {
  const counts = new Map();
  for (const n of notes.values()) for (const t of n.tags) counts.set(t, (counts.get(t) || 0) + 1);
  tagBar.replaceChildren(
    ...[...counts].sort((a, b) => b[1] - a[1]).map(([t, c]) =>
      on(el("button", { className: t === tagFilter ? "tag on" : "tag", textContent: `#${t} ${c}` }), "click", () => {
        tagFilter = tagFilter === t ? null : t;
        draw();
      })),
  );
  list.replaceChildren(
    ...visible().map((n) => {
      const li = el("li", { className: n.id === selected ? "sel" : "" },
        el("div", { className: "t", textContent: (n.pinned ? "📌 " : "") + n.title }),
        el("div", { className: "b", textContent: n.body || n.tags.map((t) => `#${t}`).join(" ") }));
      li.dataset.id = n.id;
      return on(li, "click", () => edit(n.id));
    }),
  );
}

function edit(id) {
  selected = id;
  const n = notes.get(id);
  title.value = n ? n.title : "";
  body.value = n ? n.body : "";
  tags.value = n ? n.tags.join(", ") : "";
  pinned.checked = n ? n.pinned : false;
  remove.disabled = !n;
  status.textContent = n ? `updated ${new Date(n.updated).toLocaleString()}` : "new note";
  draw();
}

async function attempt(fn) {
  try {
    await fn();
  } catch (err) {
    status.textContent = err.message;
  }
}

on(save, "click", () => attempt(async () => {
  const fields = {
    title: title.value.trim(),
    body: body.value,
    tags: tags.value.split(",").map((t) => t.trim().toLowerCase()).filter(Boolean),
    pinned: pinned.checked,
  };
  const note = selected === null ? await gadget.create(fields) : await gadget.update(selected, fields);
  notes.set(note.id, note);
  edit(note.id);
}));
on(remove, "click", () => attempt(async () => {
  if (selected !== null) await gadget.remove(selected);
  edit(null);
}));
on(newButton, "click", () => edit(null));
on(search, "input", draw);

// Subscribe first, then read the notes: no change falls between the two.
await gadget.subscribe((ev) => {
  if (ev.topic !== "notes") return;
  const { kind, note } = ev.payload;
  if (kind === "removed") notes.delete(note.id);
  else notes.set(note.id, note);
  if (kind === "removed" && note.id === selected) edit(null);
  else draw();
});
for (const n of await gadget.list()) notes.set(n.id, n);
edit(null);
