// A workspace's gadgets: the live list, and (build role) create and deploy by upload.
import { h, replace, attempt, toast } from "../dom.js";
import { GRANTS, defaultGrants, readGadgetFiles } from "../upload.js";

/**
 * Checkboxes for the grants; returns [element, () => picked grants, kind => reset]. reset
 * picks a kind's defaults only while the person has not ticked a box: their choice wins.
 */
function grantPicker(initial) {
  let touched = false;
  const boxes = GRANTS.map((g) => {
    const box = h("input", { type: "checkbox", value: g, checked: initial.includes(g) });
    box.addEventListener("change", () => (touched = true));
    return box;
  });
  const el = h(
    "fieldset",
    { class: "grants" },
    h("legend", null, "Grants"),
    GRANTS.map((g, i) => h("label", { class: "check" }, boxes[i], g.replace("atelier:host/", ""))),
  );
  const picked = () => boxes.filter((b) => b.checked).map((b) => b.value);
  const reset = (kind) => {
    if (touched) return;
    const want = defaultGrants(kind);
    for (const b of boxes) b.checked = want.includes(b.value);
  };
  return [el, picked, reset];
}

/**
 * A deploy form: files (and, for a new gadget, a name) and grants. onCode({name, code, grants,
 * client}) does the call.
 */
export function deployForm({ id, withName, label, grants, onCode }) {
  const name = h("input", { name: "name", required: true, placeholder: "todo", pattern: "[a-z][a-z0-9\\-_]*" });
  const files = h("input", { type: "file", name: "files", multiple: true, required: true, accept: ".wasm,.js,.ts,.tgz,.tar.gz" });
  const [grantsEl, picked, reset] = grantPicker(grants || defaultGrants("component"));
  files.addEventListener("change", () => {
    if (!grants && files.files.length > 0) reset([...files.files].some((f) => f.name.endsWith(".wasm")) ? "component" : "js");
  });
  const button = h("button", { type: "submit" }, label);
  const f = h(
    "form",
    { id, class: "deploy card" },
    withName ? h("label", null, h("span", null, "Name"), name) : null,
    h("label", null, h("span", null, "Code"), files),
    h("p", { class: "hint" }, "A component (.wasm, optionally with its client.js), a JS gadget's .js/.ts files (server.js and client.js), or their .tar.gz."),
    grantsEl,
    button,
  );
  f.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    button.disabled = true;
    try {
      await attempt(async () => {
        const up = await readGadgetFiles(files.files);
        await onCode({ name: name.value, grants: picked(), ...up });
        f.reset();
      });
    } finally {
      button.disabled = false;
    }
  });
  return f;
}

export async function renderGadgets(el, ctx) {
  const { ws, role, wsId } = ctx;
  const table = h("div", { id: "gadgets" });
  const draw = (list) =>
    replace(
      table,
      list.length === 0
        ? h("p", { class: "muted" }, "No gadgets yet.")
        : h(
            "table",
            { class: "list" },
            h("thead", null, h("tr", null, h("th", null, "Gadget"), h("th", null, "Version"), h("th", null, "Grants"), h("th", null, "Bindings"))),
            h(
              "tbody",
              null,
              list
                .slice()
                .sort((a, b) => a.name.localeCompare(b.name))
                .map((g) =>
                  h(
                    "tr",
                    { dataset: { gadget: g.name } },
                    h("td", null, h("a", { href: `#/w/${wsId}/g/${encodeURIComponent(g.name)}` }, g.name)),
                    h("td", null, `v${g.current} of ${g.versions.length}`),
                    h("td", { class: "grants-cell" }, g.grants.map((x) => x.replace("atelier:host/", "")).join(", ")),
                    h("td", null, Object.entries(g.bindings || {}).map(([n, t]) => `${n} → ${t}`).join(", ")),
                  ),
                ),
            ),
          ),
    );
  let gadgets = new Map((await ws.listGadgets()).map((g) => [g.name, g]));
  draw([...gadgets.values()]);
  const sub = await ws.subscribeGadgets((ev) => {
    gadgets = new Map([...gadgets].filter(([, g]) => g.id !== ev.gadget.id));
    if (ev.type !== "removed") gadgets.set(ev.gadget.name, ev.gadget);
    draw([...gadgets.values()]);
  });
  ctx.onCleanup(() => sub.cancel().catch(() => {}));
  replace(
    el,
    table,
    role === "use"
      ? null
      : h(
          "section",
          null,
          h("h2", null, "New gadget"),
          deployForm({
            id: "create-gadget",
            withName: true,
            label: "Deploy",
            onCode: async ({ name, code, grants, client }) => {
              // A component's client.js goes with it: one version holds both.
              await ws.createGadget(name, code, grants, client).info();
              toast(`deployed ${name}`);
            },
          }),
        ),
  );
}
