// Collaborators and share links.
import { h, replace, form, select, field, attempt, toast, when } from "../dom.js";
import { renderObserverSettings } from "./observers.js";

const ROLES = [["use", "use"], ["build", "build"]];

export async function renderSharing(el, ctx) {
  const { ws, role, wsId } = ctx;
  const owner = role === "owner";
  const [people, links, observers] = await Promise.all([ws.listCollaborators(), owner ? ws.listShareLinks() : [], owner ? renderObserverSettings(ws) : null]);
  const created = h("div", { id: "share-link" });
  replace(
    el,
    h("h3", null, "Collaborators"),
    h("table", { class: "list", id: "collaborators" },
      h("tbody", null,
        people.map((p) =>
          h("tr", null,
            h("td", null, p.username),
            h("td", null, h("span", { class: `role ${p.role}` }, p.role)),
            h("td", null,
              owner && p.role !== "owner"
                ? h("button", { class: "small danger", text: "Remove", onclick: () => attempt(async () => {
                    await ws.removeCollaborator(p.username);
                    ctx.refresh();
                  }) })
                : null)),
        ))),
    owner
      ? form({ id: "add-collaborator", class: "inline" }, [field("Username", { name: "username", required: true }), select("Role", "role", ROLES)], "Add collaborator", async (v) => {
          await ws.addCollaborator(v.username, v.role);
          toast(`${v.username} may ${v.role} this workspace`);
          ctx.refresh();
        })
      : null,
    owner ? h("h3", null, "Share links") : null,
    owner
      ? h("table", { class: "list", id: "share-links" },
          h("tbody", null,
            links.map((l) =>
              h("tr", null,
                h("td", { class: "mono" }, l.id),
                h("td", null, l.role),
                h("td", null, when(l.created)),
                h("td", null, h("button", { class: "small danger", text: "Revoke", onclick: () => attempt(async () => {
                  await ws.revokeShareLink(l.id);
                  ctx.refresh();
                }) })))),
          ))
      : null,
    owner
      ? form({ id: "create-share-link", class: "inline" }, select("Role", "role", ROLES), "Create share link", async (v) => {
          const link = await ws.createShareLink(v.role);
          const url = `${location.origin}/#/join/${wsId}/${encodeURIComponent(link.key)}`;
          replace(created, h("p", null, "Anyone signed in who opens this link joins as ", v.role, " (shown once):"), h("input", { class: "mono wide", readonly: true, value: url }));
          toast("share link created");
        })
      : null,
    created,
    observers,
  );
}
