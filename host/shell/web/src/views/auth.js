// Sign up and log in.
import { h, field, form, replace } from "../dom.js";

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
    ),
  );
}
