// Gatekeepers (server-wide packages; the admin installs them) and the user's accounts on them.
import { h, replace, form, field, attempt, toast, when } from "../dom.js";

export async function renderGatekeepers(el, ctx) {
  const { api, conn } = ctx;
  const admin = conn.admin;
  const [gks, accounts] = await Promise.all([api.listGatekeepers(), api.listAccounts().catch(() => [])]);
  const credFields = h("div");
  const gkSelect = h("select", { name: "gatekeeper" }, gks.map((g) => h("option", { value: g.id }, `${g.name} ${g.version}`)));
  const showCreds = () => {
    const g = gks.find((x) => x.id === gkSelect.value);
    replace(credFields, (g ? g.credentials : []).map((c) => field(`${c.name}: ${c.description}`, { name: `cred:${c.name}`, type: "password", required: true })));
  };
  gkSelect.addEventListener("change", showCreds);
  showCreds();
  const install = h("input", { type: "file", id: "install-gatekeeper", accept: ".gkp,.tar" });
  replace(
    el,
    h("h1", null, "Gatekeepers"),
    gks.length === 0
      ? h("p", { class: "muted" }, "No gatekeepers are installed on this server.")
      : h("table", { class: "list", id: "gatekeepers" },
          h("thead", null, h("tr", null, ["Name", "Vendor", "Resources", "Credentials", "Installed", ""].map((t) => h("th", null, t)))),
          h("tbody", null,
            gks.map((g) =>
              h("tr", null,
                h("td", null, `${g.name} ${g.version}`, h("div", { class: "muted mono" }, g.id.slice(0, 19))),
                h("td", null, g.vendor),
                h("td", null, g.resources.map((r) => h("div", { class: "mono" }, `${r.kind} ${r.urlPattern}`))),
                h("td", null, g.credentials.map((c) => c.name).join(", ")),
                h("td", null, when(g.installed)),
                h("td", null, admin ? h("button", { class: "small danger", text: "Remove", onclick: () => attempt(async () => {
                  await api.removeGatekeeper(g.id);
                  ctx.refresh();
                }) }) : null))))),
    admin
      ? h("section", { class: "card" },
          h("h3", null, "Install a gatekeeper package"),
          install,
          h("button", { id: "install", text: "Install", onclick: () => attempt(async () => {
            if (!install.files[0]) throw new Error("pick a package (NAME.gkp, as atelier build writes it)");
            const info = await api.installGatekeeper(new Uint8Array(await install.files[0].arrayBuffer()));
            toast(`installed ${info.name}`);
            ctx.refresh();
          }) }))
      : null,
    h("h2", null, "Your accounts"),
    accounts.length === 0
      ? h("p", { class: "muted" }, "No accounts connected.")
      : h("table", { class: "list", id: "accounts" },
          h("tbody", null,
            accounts.map((a) =>
              h("tr", null,
                h("td", null, a.name),
                h("td", { class: "mono" }, a.resource),
                h("td", null, when(a.created)),
                h("td", null, h("button", { class: "small danger", text: "Disconnect", onclick: () => attempt(async () => {
                  await api.disconnectAccount(a.id);
                  ctx.refresh();
                }) })))))),
    gks.length === 0 || conn.user.kind !== "user"
      ? null
      : h("section", { class: "card" },
          h("h3", null, "Connect an account"),
          form({ id: "connect-account" }, [h("label", null, h("span", null, "Gatekeeper"), gkSelect), field("Resource (URL)", { name: "resource", required: true }), credFields], "Connect", async (v) => {
            const creds = Object.fromEntries(Object.entries(v).filter(([k]) => k.startsWith("cred:")).map(([k, x]) => [k.slice(5), x]));
            await api.connectAccount(v.gatekeeper, v.resource, creds);
            toast("account connected");
            ctx.refresh();
          })),
  );
}
