// Blueprints: a gadget's code, grants and binding names (no data, no UI) kept under a title, to
// make new gadgets from; exported as one archive file and imported from one. Everyone lists
// their own; the build role publishes, instantiates, exports and imports.
import { h, replace, attempt, toast, when, field, form } from "../dom.js";
import { readOneFile, downloadBytes } from "../upload.js";

const RANK = { use: 0, build: 1, owner: 2 };

/** A file name for a blueprint's archive: its title in kebab case. */
function archiveName(b) {
  const base = b.title.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "") || "blueprint";
  return `${base}.blueprint.tar.gz`;
}

export async function renderBlueprints(el, ctx) {
  const { ws, role, wsId } = ctx;
  const build = RANK[role] >= RANK.build;
  const [blueprints, gadgets] = await Promise.all([ws.listBlueprints(), build ? ws.listGadgets() : []]);
  const file = h("input", { type: "file", id: "import-file", accept: ".tar.gz,.tgz" });
  const options = (list) => list.map(([v, t]) => h("option", { value: v }, t));
  replace(
    el,
    h("h3", null, "Blueprints"),
    h("p", { class: "muted" }, "A blueprint holds a gadget's code, grants and binding names, but none of its data or UI. Your blueprints are yours in every workspace."),
    blueprints.length === 0
      ? h("p", { class: "muted", id: "no-blueprints" }, build ? "No blueprints yet: publish a gadget below, or import an archive." : "No blueprints yet.")
      : h("table", { class: "list", id: "blueprints" },
          h("thead", null, h("tr", null, ["Title", "Grants and bindings", "Created", ""].map((t) => h("th", null, t)))),
          h("tbody", null,
            blueprints.map((b) =>
              h("tr", { dataset: { blueprint: b.id, title: b.title } },
                h("td", null, h("strong", null, b.title), b.description ? h("div", { class: "muted" }, b.description) : null),
                h("td", { class: "mono" },
                  (b.grants || []).map((g) => h("div", null, g.replace("atelier:host/", ""))),
                  (b.bindings || []).length > 0 ? h("div", { class: "muted" }, `binds ${b.bindings.join(", ")}`) : null),
                h("td", null, when(b.created)),
                h("td", { class: "actions" },
                  build
                    ? h("button", { class: "small export", text: "Export", onclick: () => attempt(async () => {
                        downloadBytes(await ws.exportBlueprint(b.id), archiveName(b), "application/gzip");
                        toast(`exported ${b.title}`);
                      }) })
                    : null))))),
    build && blueprints.length > 0
      ? h("section", { class: "card" },
          h("h3", null, "New gadget from a blueprint"),
          form({ id: "instantiate", class: "inline" },
            [
              h("label", null, h("span", null, "Blueprint"), h("select", { name: "blueprint" }, options(blueprints.map((b) => [b.id, b.title])))),
              field("Gadget name", { name: "name", required: true, pattern: "[a-z][a-z0-9\\-_]*", placeholder: "todo2" }),
            ],
            "Create gadget",
            async (v) => {
              await ws.createGadgetFromBlueprint(v.blueprint, v.name).info();
              toast(`created ${v.name}`);
              location.hash = `#/w/${encodeURIComponent(wsId)}/gadgets`;
            }))
      : null,
    build
      ? h("section", { class: "card" },
          h("h3", null, "Publish a gadget"),
          gadgets.length === 0
            ? h("p", { class: "muted" }, "This workspace has no gadgets to publish yet.")
            : form({ id: "publish-blueprint" },
                [
                  h("label", null, h("span", null, "Gadget"), h("select", { name: "gadget" }, options(gadgets.map((g) => [g.name, g.name])))),
                  field("Title", { name: "title", required: true, placeholder: "To-do list" }),
                  field("Description", { name: "description", placeholder: "what it is for" }),
                ],
                "Publish",
                async (v) => {
                  await ws.publishBlueprint(v.gadget, v.title, v.description || "");
                  toast(`published ${v.title}`);
                  ctx.refresh();
                }))
      : null,
    build
      ? h("section", { class: "card" },
          h("h3", null, "Import a blueprint"),
          h("p", { class: "hint" }, "A blueprint archive (.tar.gz), as Export saves it."),
          form({ id: "import-blueprint", class: "inline" }, file, "Import", async () => {
            await ws.importBlueprint(await readOneFile(file, "a blueprint archive (.tar.gz)"));
            toast("imported the blueprint");
            ctx.refresh();
          }))
      : null,
  );
}
