// The slides gadget's browser UI (docs/gadget-ui.md). It runs in the shell's sandboxed frame:
// `gadget.decks` is the gadget's exported interface decks, and `gadget.decks.open(name)` returns
// a stub of a deck resource whose methods (slides, addSlide, updateSlide, moveSlide, ...) run on
// the gadget. Every change is an event on "deck/NAME" ({kind, deck, ...}), so the decks and the
// open deck stay live across tabs, people and agents: the UI changes its view only from those
// events, never from its own calls' replies, so every tab draws the same thing.

const css = document.createElement("style");
css.textContent = `
  body { margin: 0; }
  .app { display: grid; grid-template-columns: 220px 260px 1fr; height: 100vh; }
  aside, nav { border-right: 1px solid #e3e6eb; display: flex; flex-direction: column; min-height: 0; }
  .top { padding: 10px; display: flex; gap: 6px; align-items: center; }
  .top input { flex: 1; min-width: 0; }
  input, textarea, select { font: inherit; padding: 6px 8px; border: 1px solid #c9ced6; border-radius: 6px; }
  button { font: inherit; padding: 4px 10px; border-radius: 6px; border: 1px solid #2f6fde; background: #2f6fde; color: #fff; cursor: pointer; }
  button.quiet { background: #fff; color: #2f6fde; }
  button.danger { background: #fff; color: #c92a2a; border-color: #e3a0a0; }
  button:disabled { opacity: .45; cursor: default; }
  ul { list-style: none; margin: 0; padding: 0; overflow: auto; flex: 1; }
  li { padding: 7px 10px; border-top: 1px solid #eef0f3; cursor: pointer; display: flex; gap: 6px; align-items: center; }
  li.sel { background: #eef4ff; }
  li .t { flex: 1; min-width: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  li .n, .muted { color: #667085; font-size: 12px; }
  li button { padding: 0 6px; background: #fff; color: #4a5568; border-color: #e3e6eb; }
  main { padding: 12px 16px; display: flex; flex-direction: column; gap: 8px; min-height: 0; overflow: auto; }
  main > * { flex-shrink: 0; }
  main textarea { min-height: 140px; resize: vertical; }
  .row { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
  .row input[type=text] { flex: 1; }
  .status { min-height: 1.4em; }
  .status.wait { color: #9a6700; }
  .status.err { color: #c92a2a; }
  .present { position: fixed; inset: 0; background: #101522; color: #f4f6fa; display: flex; flex-direction: column; z-index: 10; }
  .present .stage { flex: 1; display: flex; flex-direction: column; justify-content: center; padding: 5vh 7vw; overflow: hidden; }
  .present h1 { font-size: 6vh; margin: 0 0 3vh; }
  .present .body { font-size: 3.4vh; line-height: 1.45; }
  .present .cols { display: grid; grid-template-columns: 1fr 1fr; gap: 4vw; }
  .present.title .stage, .present.section .stage { align-items: center; text-align: center; }
  .present.title h1 { font-size: 9vh; }
  .present.section h1 { font-size: 8vh; color: #8fb3ff; }
  .present ul { list-style: disc; padding-left: 1.3em; overflow: visible; }
  .present li { display: list-item; padding: 0; border: 0; cursor: auto; margin: .3em 0; }
  .present code { background: #263049; padding: 0 .3em; border-radius: 4px; }
  .present .bar { display: flex; justify-content: space-between; padding: 8px 14px; color: #8a94a6; font-size: 13px; }`;
document.head.append(css);

const el = (tag, props = {}, ...children) => {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
};
const on = (e, type, fn) => (e.addEventListener(type, fn), e);
const LAYOUTS = ["title", "content", "two-column", "section"];

// ---- state: the decks and the open deck, as the gadget last reported them ----
const decks = new Map(); // name -> {name, title, slides, "updated-ms"}
let open = null; // {name, stub, title, slides: [slide]} of the deck being edited
let selected = -1; // index of the slide in the editor
let dirty = false; // the editor holds changes not saved yet

// ---- the page ----
const newName = el("input", { type: "text", id: "deck-name", placeholder: "new-deck" });
const openButton = el("button", { id: "open-deck", textContent: "Open" });
const deckList = el("ul", { id: "decks" });
const deckTitle = el("input", { type: "text", id: "deck-title", placeholder: "Deck title" });
const slideList = el("ul", { id: "slides" });
const addButton = el("button", { id: "add-slide", textContent: "+ Slide" });
const presentButton = el("button", { className: "quiet", id: "present", textContent: "▶ Present" });
const publishButton = el("button", { className: "quiet", id: "publish", textContent: "Publish to notes" });
const deleteButton = el("button", { className: "danger", id: "delete-deck", textContent: "Delete deck" });
const slideTitle = el("input", { type: "text", id: "slide-title", placeholder: "Slide title" });
const layout = el("select", { id: "slide-layout" }, ...LAYOUTS.map((l) => el("option", { value: l, textContent: l })));
const body = el("textarea", { id: "slide-body", placeholder: "Markdown: - bullets, **bold**, *italic*, `code`; --- splits two columns" });
const notes = el("textarea", { id: "slide-notes", placeholder: "Speaker notes (not shown when presenting)" });
const saveButton = el("button", { id: "save-slide", textContent: "Save slide" });
const removeButton = el("button", { className: "danger", id: "remove-slide", textContent: "Remove slide" });
const status = el("div", { className: "status muted", id: "status" });
const editor = el("main", {},
  el("div", { className: "row" }, deckTitle, presentButton, publishButton, deleteButton),
  status,
  el("div", { className: "row" }, slideTitle, layout),
  body, notes,
  el("div", { className: "row" }, saveButton, removeButton));
document.body.append(el("div", { className: "app" },
  el("aside", {}, el("div", { className: "top" }, newName, openButton), deckList),
  el("nav", {}, el("div", { className: "top" }, el("span", { className: "muted", textContent: "Slides" }), addButton), slideList),
  editor));

function say(text, kind = "") {
  status.textContent = text;
  status.className = `status ${kind || "muted"}`;
}

/** What attempt returns when the call failed. */
const FAILED = Symbol("failed");

/** Runs gadget calls; a refusal (bad input, deleted deck, missing binding) shows its message. */
async function attempt(fn) {
  try {
    return await fn();
  } catch (err) {
    say(err.message, "err");
    return FAILED;
  }
}

// ---- drawing ----
function drawDecks() {
  deckList.replaceChildren(...[...decks.values()].sort((a, b) => a.name.localeCompare(b.name)).map((d) => {
    const li = el("li", { className: open && open.name === d.name ? "sel" : "" },
      el("span", { className: "t", textContent: d.title }), el("span", { className: "n", textContent: String(d.slides) }));
    li.dataset.name = d.name;
    li.title = d.name;
    return on(li, "click", () => openDeck(d.name));
  }));
}

function drawSlides() {
  const n = open ? open.slides.length : 0;
  slideList.replaceChildren(...(open ? open.slides : []).map((s, i) => {
    const up = on(el("button", { textContent: "↑", title: "Move up", disabled: i === 0 }), "click", (ev) => {
      ev.stopPropagation();
      attempt(() => open.stub.moveSlide(i, i - 1));
    });
    const down = on(el("button", { textContent: "↓", title: "Move down", disabled: i === n - 1 }), "click", (ev) => {
      ev.stopPropagation();
      attempt(() => open.stub.moveSlide(i, i + 1));
    });
    const li = el("li", { className: i === selected ? "sel" : "" },
      el("span", { className: "n", textContent: String(i + 1) }), el("span", { className: "t", textContent: s.title }), up, down);
    li.dataset.index = i;
    return on(li, "click", () => select(i));
  }));
  for (const b of [addButton, presentButton, publishButton, deleteButton, deckTitle]) b.disabled = !open;
  presentButton.disabled = n === 0;
}

/** Fills the editor from the selected slide, unless it holds unsaved changes. */
function fillEditor() {
  const s = open && open.slides[selected];
  for (const f of [slideTitle, layout, body, notes, saveButton, removeButton]) f.disabled = !s;
  if (dirty) return;
  slideTitle.value = s ? s.title : "";
  layout.value = s ? s.layout : "content";
  body.value = s ? s.body : "";
  notes.value = s && s.notes !== null ? s.notes : "";
}

function select(i) {
  selected = i;
  dirty = false;
  fillEditor();
  drawSlides();
}

for (const f of [slideTitle, layout, body, notes]) on(f, "input", () => (dirty = true));

// ---- decks ----
async function openDeck(name) {
  const stub = await attempt(() => gadget.decks.open(name));
  if (stub === FAILED) return false;
  const read = await attempt(() => Promise.all([stub.info(), stub.slides()]));
  if (read === FAILED) return false;
  if (open) open.stub[Symbol.dispose](); // drops our handle in the gadget
  const [info, slides] = read;
  open = { name, stub, title: info.title, slides };
  deckTitle.value = info.title;
  say(`opened ${name}`);
  select(slides.length ? 0 : -1);
  drawDecks();
  return true;
}

/** Reads the open deck's slides again (after an event too large to carry its slide). */
async function reload() {
  open.slides = await open.stub.slides();
  fillEditor();
  drawSlides();
}

on(openButton, "click", () => {
  const name = newName.value.trim();
  if (name) openDeck(name).then((ok) => ok && (newName.value = ""));
});
on(newName, "keydown", (ev) => ev.key === "Enter" && openButton.click());
on(deckTitle, "keydown", (ev) => {
  if (ev.key === "Enter") attempt(() => open.stub.setTitle(deckTitle.value));
});
on(deckTitle, "blur", () => open && deckTitle.value !== open.title && attempt(() => open.stub.setTitle(deckTitle.value)));

let deleteArmed = null; // no confirm() in the sandbox: a second click within 3 s deletes
on(deleteButton, "click", () => {
  if (!deleteArmed) {
    deleteButton.textContent = "Click again to delete";
    deleteArmed = setTimeout(() => ((deleteArmed = null), (deleteButton.textContent = "Delete deck")), 3000);
    return;
  }
  clearTimeout(deleteArmed);
  deleteArmed = null;
  deleteButton.textContent = "Delete deck";
  attempt(() => gadget.decks.deleteDeck(open.name));
});

// ---- slides ----
const fromEditor = () => ({ title: slideTitle.value, body: body.value, layout: layout.value, notes: notes.value.trim() ? notes.value : null });

on(addButton, "click", async () => {
  const index = await attempt(() => open.stub.addSlide({ title: `Slide ${open.slides.length + 1}`, body: "", layout: "content", notes: null }));
  if (index !== FAILED) select(index); // drawn when the "added" event arrives
});
on(saveButton, "click", async () => {
  const i = selected;
  if ((await attempt(() => open.stub.updateSlide(i, fromEditor()))) === FAILED) return;
  dirty = false;
  say("saved");
});
on(removeButton, "click", () => attempt(() => open.stub.removeSlide(selected)));

// ---- publishing: an action of the bound gatekeeper, applied once its owner approves ----
on(publishButton, "click", async () => {
  publishButton.disabled = true;
  say("sending…");
  const action = await attempt(() => open.stub.publish("notes"));
  publishButton.disabled = false;
  if (action !== FAILED) waiting(action, "you");
});
const waiting = (action, who) =>
  say(`Sent to notes by ${who} as action #${action}: it waits for the account owner's approval (Workspace → Actions).`, "wait");

// ---- live updates ----
function applyEvent(name, ev) {
  if (ev.kind === "deleted") decks.delete(name);
  else decks.set(name, ev.deck);
  drawDecks();
  if (!open || open.name !== name) return;
  const s = open.slides;
  switch (ev.kind) {
    case "deleted":
      open.stub[Symbol.dispose]();
      open = null;
      selected = -1;
      deckTitle.value = "";
      say(`deck ${name} was deleted`, "err");
      break;
    case "retitled":
      open.title = ev.deck.title;
      if (document.activeElement !== deckTitle) deckTitle.value = ev.deck.title;
      break;
    case "added":
      if (!ev.slide) return void reload();
      s.splice(ev.index, 0, ev.slide);
      break;
    case "updated":
      if (!ev.slide) return void reload();
      s[ev.index] = ev.slide;
      if (ev.index === selected && dirty) say("this slide was changed elsewhere; saving overwrites it", "wait");
      break;
    case "moved": {
      s.splice(ev.to, 0, ...s.splice(ev.from, 1));
      if (selected === ev.from) selected = ev.to;
      else if (ev.from < selected && selected <= ev.to) selected--;
      else if (ev.to <= selected && selected < ev.from) selected++;
      break;
    }
    case "removed":
      s.splice(ev.index, 1);
      if (ev.index === selected) (selected = Math.min(selected, s.length - 1)), (dirty = false);
      else if (ev.index < selected) selected--;
      break;
    case "published":
      if (!status.className.includes("wait")) waiting(ev.action, "someone");
      break;
  }
  fillEditor();
  drawSlides();
  if (presenting) drawPresent();
}

// ---- present mode: the frame's whole area, arrow keys to move, Escape to leave ----
const stage = el("div", { className: "stage" });
const bar = el("div", { className: "bar" });
const presentView = el("div", { className: "present", id: "presentation", tabIndex: -1 }, stage, bar);
let presenting = false;
let shown = 0;

/** Renders a little markdown (paragraphs, - lists, # headings, **bold**, *italic*, `code`) as DOM nodes: no HTML is parsed. */
function markdown(text) {
  const out = [];
  let list = null;
  let para = [];
  const flush = () => {
    if (para.length) out.push(el("p", {}, ...inline(para.join(" "))));
    para = [];
  };
  for (const line of text.split("\n")) {
    const item = /^\s*[-*]\s+(.*)$/.exec(line);
    const head = /^(#{1,3})\s+(.*)$/.exec(line);
    if (item) {
      flush();
      if (!list) out.push((list = el("ul")));
      list.append(el("li", {}, ...inline(item[1])));
      continue;
    }
    list = null;
    if (head) {
      flush();
      out.push(el(`h${head[1].length + 1}`, {}, ...inline(head[2])));
    } else if (!line.trim()) flush();
    else para.push(line.trim());
  }
  flush();
  return out;
}

function inline(text) {
  const parts = [];
  const re = /\*\*(.+?)\*\*|\*(.+?)\*|`(.+?)`/g;
  let last = 0;
  for (let m; (m = re.exec(text)); last = re.lastIndex) {
    parts.push(text.slice(last, m.index));
    parts.push(m[1] ? el("strong", { textContent: m[1] }) : m[2] ? el("em", { textContent: m[2] }) : el("code", { textContent: m[3] }));
  }
  parts.push(text.slice(last));
  return parts;
}

function drawPresent() {
  const s = open && open.slides[shown];
  if (!s) return leavePresent();
  presentView.className = `present ${s.layout}`;
  const content = [el("h1", { textContent: s.title })];
  if (s.layout === "two-column") {
    const [left, ...right] = s.body.split(/^---$/m);
    content.push(el("div", { className: "body cols" }, el("div", {}, ...markdown(left)), el("div", {}, ...markdown(right.join("\n")))));
  } else if (s.layout !== "section") content.push(el("div", { className: "body" }, ...markdown(s.body)));
  stage.replaceChildren(...content);
  bar.textContent = `${open.title} — ${shown + 1} / ${open.slides.length}  ·  ← → to move, Esc to leave`;
}

function present() {
  presenting = true;
  shown = Math.max(0, selected);
  document.body.append(presentView);
  presentView.focus();
  drawPresent();
}

function leavePresent() {
  presenting = false;
  presentView.remove();
  select(Math.min(shown, open ? open.slides.length - 1 : -1));
}

on(presentButton, "click", present);
on(presentView, "click", () => ((shown = Math.min(shown + 1, open.slides.length - 1)), drawPresent()));
on(document, "keydown", (ev) => {
  if (!presenting) return;
  const last = open.slides.length - 1;
  const moves = { ArrowRight: shown + 1, ArrowDown: shown + 1, PageDown: shown + 1, " ": shown + 1, ArrowLeft: shown - 1, ArrowUp: shown - 1, PageUp: shown - 1, Home: 0, End: last };
  if (ev.key === "Escape") return leavePresent();
  if (!(ev.key in moves)) return;
  ev.preventDefault();
  shown = Math.max(0, Math.min(last, moves[ev.key]));
  drawPresent();
});

// Subscribe first, then read the decks: no change falls between the two.
await gadget.subscribe((ev) => {
  if (ev.topic.startsWith("deck/")) applyEvent(ev.topic.slice(5), ev.payload);
});
for (const d of await gadget.decks.listDecks()) decks.set(d.name, d);
drawDecks();
drawSlides();
fillEditor();
say(decks.size ? "Pick a deck, or open a new one by name." : "Open a new deck by name (a-z, 0-9, - and _).");
