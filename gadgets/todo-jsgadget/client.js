// The to-do list's browser UI (docs/gadget-ui.md). It fits all three to-do gadgets, which share
// one API: this JS gadget uploads it with its folder; for the components (todo-js, todo-go) pick
// it next to the .wasm in the shell's deploy form, or set it with Gadget.setClient.
//
// It runs in the shell's sandboxed frame: `gadget` reaches the gadget's methods (add, list,
// toggle, remove) and subscribe(cb), whose callback gets every change {topic: "todos", payload:
// {kind, todo}}, also those made in other tabs, by other people or by agents.

const css = document.createElement("style");
css.textContent = `
  h1 { font-size: 18px; margin: 0 0 10px; }
  .new { display: flex; gap: 6px; margin-bottom: 10px; }
  input[type=text] { flex: 1; font: inherit; padding: 6px 8px; border: 1px solid #c9ced6; border-radius: 6px; }
  button { font: inherit; padding: 4px 10px; border-radius: 6px; border: 1px solid #2f6fde; background: #2f6fde; color: #fff; cursor: pointer; }
  ul { list-style: none; padding: 0; margin: 0; }
  li { display: flex; align-items: center; gap: 8px; padding: 6px 2px; border-bottom: 1px solid #eef0f3; }
  li .title { flex: 1; }
  li.done .title { text-decoration: line-through; color: #8a94a6; }
  li button { background: #fff; color: #c92a2a; border-color: #e3e6eb; }
  .count { color: #667085; font-size: 12px; margin-top: 8px; }`;
document.head.append(css);

const el = (tag, props = {}, ...children) => {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
};

const input = el("input", { type: "text", id: "new-todo", placeholder: "What needs doing?", required: true });
const list = el("ul", { id: "todos" });
const count = el("div", { className: "count", id: "todo-count" });
const addButton = el("button", { id: "add-todo", textContent: "Add" });
document.body.append(el("h1", { textContent: "To-do" }), el("div", { className: "new" }, input, addButton), list, count);

/** The items by id, as the gadget last reported them. */
const items = new Map();

function draw() {
  const sorted = [...items.values()].sort((a, b) => a.id - b.id);
  list.replaceChildren(
    ...sorted.map((t) => {
      const box = el("input", { type: "checkbox", checked: t.done });
      box.addEventListener("change", () => gadget.toggle(t.id));
      const remove = el("button", { textContent: "✕", title: "Remove" });
      remove.addEventListener("click", () => gadget.remove(t.id));
      const li = el("li", { className: t.done ? "done" : "" }, box, el("span", { className: "title", textContent: t.title }), remove);
      li.dataset.id = t.id;
      return li;
    }),
  );
  const open = sorted.filter((t) => !t.done).length;
  count.textContent = `${open} open, ${sorted.length - open} done`;
}

// No <form>: the sandbox allows no form submission, so not even the submit event fires.
async function add() {
  const title = input.value.trim();
  if (!title) return;
  input.value = "";
  await gadget.add(title); // the event that follows updates the list, here and everywhere
}
addButton.addEventListener("click", add);
input.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter") add();
});

// Subscribe first, then read the list: no change falls between the two.
await gadget.subscribe((ev) => {
  if (ev.topic !== "todos") return;
  const { kind, todo } = ev.payload;
  if (kind === "removed") items.delete(todo.id);
  else items.set(todo.id, todo);
  draw();
});
for (const t of await gadget.list()) items.set(t.id, t);
draw();
