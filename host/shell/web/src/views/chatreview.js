// What an agent asks a person to decide in a chat: its draft (Accept/Reject), a dry run
// (Commit/Discard) and a connection request (an account, or Decline). Nothing of these runs
// until the person clicks.
import { h, attempt, toast, when } from "../dom.js";
import { draftFile, dryRunDiff } from "../diff.js";

/** Whether a draft holds anything to accept. */
export function draftEmpty(d) {
  return !d || ((d.files || []).length === 0 && (d.newGadgets || []).length === 0);
}

// decide disables a card's buttons while fn runs, and for good once it succeeded.
function decide(buttons, fn) {
  return () =>
    attempt(async () => {
      for (const b of buttons) b.disabled = true;
      try {
        await fn();
      } catch (err) {
        for (const b of buttons) b.disabled = false;
        throw err;
      }
    });
}

/** The chat's draft as a diff per file, with Accept/Reject (build and owner only). */
export function draftCard(ctx, chatId, d) {
  const { ws, role } = ctx;
  const stale = d.stale || [];
  const accept = h("button", { id: "draft-accept", text: "Accept", disabled: stale.length > 0 });
  const reject = h("button", { class: "danger", id: "draft-reject", text: "Reject" });
  accept.addEventListener("click", decide([accept, reject], async () => {
    const deployed = await ws.acceptDraft(chatId);
    toast(`deployed ${(deployed || []).map((g) => `${g.name} v${g.current}`).join(", ")}`);
  }));
  reject.addEventListener("click", decide([accept, reject], async () => {
    await ws.rejectDraft(chatId);
    toast("draft rejected");
  }));
  return h("section", { class: "card draft", id: "draft" },
    h("h3", null, "Proposed change"),
    (d.newGadgets || []).length === 0
      ? null
      : h("p", null, "New gadgets: ", d.newGadgets.map((g) => (g.blueprint ? `${g.name} (from ${g.blueprint})` : g.name)).join(", ")),
    stale.length === 0 ? null : h("p", { class: "notice error" }, `Based on an older version of ${stale.join(", ")}: ask the agent to redo its edits.`),
    (d.files || []).map(draftFile),
    role === "use" ? h("p", { class: "muted" }, "Someone with the build role decides on it.") : h("div", { class: "buttons" }, accept, reject));
}

/**
 * The dry run an executeCode tool message holds (its output is the CodeResult as JSON, then
 * a blank line and a note), or null.
 */
export function dryRunOf(m) {
  if (m.role !== "tool" || m.toolName !== "executeCode") return null;
  try {
    const r = JSON.parse(m.text.split("\n\n")[0]);
    return r && r.dryRun && r.dryRun.id ? r.dryRun : null;
  } catch {
    return null; // an output cut short, or not a result
  }
}

/** A dry run's diff, with Commit/Discard. */
export function dryRunCard(ctx, d) {
  const { ws } = ctx;
  const commit = h("button", { class: "dry-commit", text: "Commit" });
  const discard = h("button", { class: "danger dry-discard", text: "Discard" });
  const state = h("span", { class: "muted" }, ` held until ${when(d.expires)}`);
  commit.addEventListener("click", decide([commit, discard], async () => {
    const r = await ws.commitDryRun(d.id);
    const queued = (r && r.actions) || [];
    state.textContent = queued.length ? ` committed; actions ${queued.join(", ")} wait for approval` : " committed";
  }));
  discard.addEventListener("click", decide([commit, discard], async () => {
    await ws.discardDryRun(d.id);
    state.textContent = " discarded";
  }));
  return h("section", { class: "card dry-run", dataset: { dryRun: d.id } },
    h("h3", null, "Dry run", state),
    dryRunDiff(d),
    h("div", { class: "buttons" }, commit, discard));
}

/** A connection request: pick one of the user's accounts of the gatekeeper, or decline. */
export async function connectionCard(ctx, chatId, req) {
  const { ws, api } = ctx;
  const accounts = (await api.listAccounts().catch(() => [])).filter((a) => a.gatekeeper === req.gatekeeper || a.name === req.gatekeeper);
  const pick = h("select", { class: "conn-account" }, accounts.map((a) => h("option", { value: a.id }, `${a.name}: ${a.resource}`)));
  const accept = h("button", { class: "conn-accept", text: "Connect", disabled: accounts.length === 0 });
  const decline = h("button", { class: "danger conn-decline", text: "Decline" });
  const state = h("p", { class: "muted" });
  const answer = async (account) => {
    await ws.answerConnection(chatId, req.id, account);
    state.textContent = account ? "connected; the agent goes on" : "declined";
  };
  accept.addEventListener("click", decide([accept, decline], () => answer(pick.value)));
  decline.addEventListener("click", decide([accept, decline], () => answer(null)));
  return h("section", { class: "card connection", dataset: { request: req.id } },
    h("h3", null, "The agent asks for a connection"),
    h("p", null, `${req.gatekeeper} as binding "${req.binding}"${req.gadget ? ` of gadget ${req.gadget}` : " for Code Mode"}`),
    h("p", { class: "reason" }, req.reason),
    accounts.length === 0
      ? h("p", { class: "muted" }, "You have no account on this gatekeeper: connect one under Gatekeepers first.")
      : h("label", null, h("span", null, "Account "), pick),
    h("div", { class: "buttons" }, accept, decline),
    state);
}
