// The signed-in person's account: who they are and changing their password (errors shown in
// the form, next to the fields).
import { h, replace, field, errorText, toast } from "../dom.js";

export async function renderAccount(el, ctx) {
  const { api, conn } = ctx;
  const u = conn.user;
  if (u.kind !== "user") {
    replace(el, h("h1", null, "Account"), h("p", { class: "muted" }, `You are signed in as the agent ${u.username} of ${u.owner}. Agents have no password: their owner revokes or replaces their token on the Agents page.`));
    return;
  }
  const message = h("p", { id: "password-message", role: "alert", hidden: true });
  const say = (text, kind) => {
    message.className = `notice ${kind}`;
    message.textContent = text;
    message.hidden = false;
  };
  const button = h("button", { type: "submit" }, "Change password");
  const f = h(
    "form",
    { id: "change-password", autocomplete: "off" },
    field("Current password (empty if you have none yet, as the first-run admin)", { name: "old", type: "password", autocomplete: "current-password" }),
    field("New password (at least 8 characters)", { name: "new", type: "password", autocomplete: "new-password", required: true }),
    field("New password again", { name: "confirm", type: "password", autocomplete: "new-password", required: true }),
    message,
    button,
  );
  f.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const v = Object.fromEntries(new FormData(f));
    if (v.new !== v.confirm) {
      say("The new password and its confirmation differ: type the same password twice.", "error");
      return;
    }
    button.disabled = true;
    try {
      await api.changePassword(v.old, v.new);
      f.reset();
      say("Password changed. Sign in with the new one from now on.", "ok");
      toast("password changed");
    } catch (err) {
      say(errorText(err), "error");
    } finally {
      button.disabled = false;
    }
  });
  replace(
    el,
    h("h1", null, "Account"),
    h("p", { class: "muted" }, "Signed in as ", h("strong", { id: "account-name" }, u.username), "."),
    h("section", { class: "card" }, h("h3", null, "Change password"), f),
  );
}
