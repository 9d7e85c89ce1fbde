// The workspaces the user owns or shares: create, open, rename, delete.
import { h, field, form, replace, attempt, toast } from "../dom.js";

export async function renderWorkspaces(el, ctx) {
  const { api, conn } = ctx;
  const list = await api.listWorkspaces();
  const isUser = conn.user.kind === "user";
  replace(
    el,
    h("h1", null, "Workspaces"),
    isUser
      ? form({ id: "create-workspace", class: "inline" }, field("Name", { name: "name", required: true }), "Create workspace", async (v) => {
          const ws = api.createWorkspace(v.name);
          const info = await ws.info();
          location.hash = `#/w/${info.id}`;
        })
      : null,
    list.length === 0
      ? h("p", { class: "muted" }, "No workspaces yet.")
      : h(
          "table",
          { class: "list", id: "workspaces" },
          h("thead", null, h("tr", null, h("th", null, "Name"), h("th", null, "Owner"), h("th", null, "Your role"), h("th", null, ""))),
          h(
            "tbody",
            null,
            list.map((w) =>
              h(
                "tr",
                { dataset: { id: w.id, name: w.name } },
                h("td", null, h("a", { href: `#/w/${w.id}` }, w.name)),
                h("td", null, w.owner),
                h("td", null, h("span", { class: `role ${w.role}` }, w.role)),
                h(
                  "td",
                  { class: "actions" },
                  w.role !== "use"
                    ? h("button", {
                        class: "small",
                        text: "Rename",
                        onclick: () => {
                          const name = prompt(`New name for ${w.name}`, w.name);
                          if (name) attempt(async () => {
                            await api.openWorkspace(w.id).rename(name);
                            ctx.refresh();
                          });
                        },
                      })
                    : null,
                  w.role === "owner"
                    ? h("button", {
                        class: "small danger",
                        text: "Delete",
                        onclick: () => {
                          if (confirm(`Delete workspace ${w.name} with all its gadgets and their state?`))
                            attempt(async () => {
                              await api.openWorkspace(w.id).delete();
                              toast(`deleted ${w.name}`);
                              ctx.refresh();
                            });
                        },
                      })
                    : null,
                ),
              ),
            ),
          ),
        ),
  );
}
