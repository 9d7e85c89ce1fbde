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
    if (g && g.oauth) {
      replace(credFields, h("p", { class: "muted", id: "oauth-note" }, g.oauthClient
        ? `${g.name} connects by OAuth: you sign in at the provider in a new window, and the account appears here when you are done.`
        : `${g.name} connects by OAuth, but the server's admin has not configured its OAuth client yet.`));
      return;
    }
    replace(credFields, (g ? g.credentials : []).map((c) => field(`${c.name}: ${c.description}`, { name: `cred:${c.name}`, type: "password", required: !c.optional })));
  };
  // authorize starts an OAuth authorization for the resource in a new window (opened before
  // the first await, so that the click still allows it) and refreshes the page once the
  // account exists (the server got the provider's answer), or after 10 minutes.
  const authorize = async (gatekeeper, resource) => {
    const win = window.open("about:blank", "_blank");
    const known = new Set(accounts.filter((a) => !a.state).map((a) => a.id));
    let started;
    try {
      started = await api.connectAccount(gatekeeper, resource);
    } catch (err) {
      if (win) win.close();
      throw err;
    }
    if (win) {
      win.location.href = started.authorizationUrl;
      toast("sign in at the provider in the new window");
    } else {
      toast(h("span", null, "Your browser blocked the sign-in window: ", h("a", { href: started.authorizationUrl, target: "_blank", rel: "noopener", text: "open it here" })));
    }
    const until = Date.now() + 10 * 60 * 1000;
    while (Date.now() < until && el.isConnected) {
      await new Promise((r) => setTimeout(r, 1000));
      const now = await api.listAccounts();
      const done = now.find((a) => a.gatekeeper === gatekeeper && a.resource === resource && !a.state && !known.has(a.id));
      if (done) {
        toast(`connected ${done.name} ${done.resource}`);
        ctx.refresh();
        return;
      }
    }
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
              h("tr", { dataset: { gatekeeper: g.name } },
                h("td", null, `${g.name} ${g.version}`, h("div", { class: "muted mono" }, g.id.slice(0, 19))),
                h("td", null, g.vendor),
                h("td", null, g.resources.map((r) => h("div", { class: "mono" }, `${r.kind} ${r.urlPattern}`))),
                h("td", null, g.oauth ? (g.oauthClient ? "OAuth sign-in" : "OAuth sign-in (the admin has not configured the client)") : g.credentials.map((c) => c.name).join(", ")),
                h("td", null, when(g.installed)),
                h("td", null, admin && g.format !== "builtin" ? h("button", { class: "small danger remove-gatekeeper", text: "Remove", onclick: () => {
                  if (!confirm(`Remove the gatekeeper ${g.name}? Every account on it is disconnected, and gadgets bound to them fail until bound again.`)) return;
                  attempt(async () => {
                    await api.removeGatekeeper(g.id);
                    toast(`removed ${g.name}`);
                    ctx.refresh();
                  });
                } }) : null))))),
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
              h("tr", { dataset: { account: a.id, state: a.state || "ok" } },
                h("td", null, a.name),
                h("td", { class: "mono" }, a.resource),
                h("td", null, when(a.created)),
                h("td", null, a.state === "reconnect"
                  ? h("span", { class: "warn" }, "The provider no longer accepts this account's sign-in. ",
                      h("button", { class: "small reconnect", text: "Reconnect", onclick: () => attempt(() => authorize(a.gatekeeper, a.resource)) }))
                  : a.oauth ? h("span", { class: "muted" }, "OAuth") : null),
                h("td", null, h("button", { class: "small danger", text: "Disconnect", onclick: () => attempt(async () => {
                  await api.disconnectAccount(a.id);
                  ctx.refresh();
                }) })))))),
    gks.length === 0 || conn.user.kind !== "user"
      ? null
      : h("section", { class: "card" },
          h("h3", null, "Connect an account"),
          form({ id: "connect-account" }, [h("label", null, h("span", null, "Gatekeeper"), gkSelect), field("Resource (URL)", { name: "resource", required: true }), credFields], "Connect", (v) => {
            if (gks.find((x) => x.id === v.gatekeeper)?.oauth) return authorize(v.gatekeeper, v.resource);
            return connectWithCredentials(v);
          })),
  );
  async function connectWithCredentials(v) {
    const creds = Object.fromEntries(Object.entries(v).filter(([k]) => k.startsWith("cred:")).map(([k, x]) => [k.slice(5), x]));
    await api.connectAccount(v.gatekeeper, v.resource, creds);
    toast("account connected");
    ctx.refresh();
  }
}
