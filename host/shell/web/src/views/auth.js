// Sign up, log in, and the first run: the admin signs in with the token `atelier serve`
// printed and is offered to set a password (renderPasswordOffer).
import { h, field, form, replace, toast } from "../dom.js";

export function renderAuth(el, { conn }) {
  const signupsOff = conn.serverInfo && conn.serverInfo.signupsEnabled === false;
  const fields = () => [
    field("Username", { name: "username", autocomplete: "username", required: true, pattern: "[a-z][a-z0-9_\\-]{0,31}" }),
    field("Password", { name: "password", type: "password", autocomplete: "current-password", required: true, minlength: 8 }),
  ];
  replace(
    el,
    h(
      "div",
      { class: "auth" },
      h("h1", null, "Atelier"),
      h("p", { class: "muted" }, "Gadgets in sandboxes, for you and your agents."),
      conn.lastError && !conn.token ? h("p", { class: "muted" }, conn.lastError) : null,
      h(
        "section",
        { class: "card" },
        h("h2", null, "Log in"),
        form({ id: "login" }, fields(), "Log in", (v) => conn.login(v.username, v.password)),
      ),
      signupsOff
        ? h("p", { class: "muted" }, "Sign-ups are off on this server.")
        : h(
            "section",
            { class: "card" },
            h("h2", null, "Sign up"),
            form({ id: "signup" }, fields(), "Sign up", (v) => conn.signup(v.username, v.password)),
          ),
      h(
        "details",
        { class: "card", id: "first-run" },
        h("summary", null, "First run? Sign in with the admin token"),
        h("p", { class: "hint" }, "On its first run `atelier serve` printed an admin token. Paste it here to sign in as admin; you can then set a password for the next time."),
        form(
          { id: "token-login" },
          [field("Admin token", { name: "token", type: "password", autocomplete: "off", required: true, placeholder: "atl_…" })],
          "Sign in with the token",
          async (v) => {
            conn.offerPassword = true; // set first: signing in renders the next page at once
            try {
              await conn.useToken(v.token.trim());
            } finally {
              conn.offerPassword = conn.admin;
            }
          },
        ),
      ),
    ),
  );
}

/**
 * The offer to set the admin's password after a sign-in with the first-run token, or null when
 * there is none to make. done() removes it (the password was set, or the admin said not now).
 */
export function renderPasswordOffer({ conn, api }) {
  if (!conn.offerPassword || !conn.admin) return null;
  const done = () => {
    conn.offerPassword = false;
    box.remove();
  };
  const box = h(
    "section",
    { class: "card", id: "password-offer" },
    h("h2", null, "Set a password for admin"),
    h("p", { class: "hint" }, "You signed in with the admin token. With a password you can log in as admin next time (the token keeps working; keep it secret)."),
    form(
      { id: "set-password", class: "inline" },
      [
        field("New password", { name: "password", type: "password", autocomplete: "new-password", required: true, minlength: 8 }),
        field("Repeat it", { name: "again", type: "password", autocomplete: "new-password", required: true, minlength: 8 }),
      ],
      "Set password",
      async (v) => {
        if (v.password !== v.again) throw new Error("the two passwords differ; type the same one twice");
        try {
          await api.changePassword("", v.password);
        } catch (err) {
          if (err && err.code === "UNAUTHORIZED" && /old password is wrong/.test(err.message || "")) {
            throw new Error("admin already has a password: log in with it, or change it with `atelier admin password --current`");
          }
          throw err;
        }
        done();
        toast("The admin's password is set: log in as admin with it next time.");
      },
    ),
    h("button", { class: "small plain", id: "password-offer-later", type: "button", text: "Not now", onclick: done }),
  );
  return box;
}
