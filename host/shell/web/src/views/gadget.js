// One gadget: its UI (client.js in a sandboxed frame), a method console, its live console log, versions (which carry
// a UI, and name the chat whose draft made them) and rollback, deploy of a new version, a
// UI-only change, inspect, rename and delete.
import { h, replace, attempt, toast, errorNode, clearErrors, json, when, kib } from "../dom.js";
import { mountGadgetFrame } from "../gadgetframe.js";
import { deployForm } from "./gadgets.js";
import { liveConsole } from "./console.js";

export async function renderGadget(el, ctx) {
  const { ws, role, name } = ctx;
  const gadget = ws.gadget(name);
  const info = await gadget.info();
  const build = role !== "use";

  // The frame's bridge calls through one connect() stub; a new session re-renders the page
  // (main.js), which unmounts the frame and releases it first.
  let app;
  const currentApp = () => (app ??= gadget.connect());
  const releaseApp = () => app?.[Symbol.dispose]();

  const uiBox = h("div", { class: "gadget-ui", id: "gadget-ui" });
  let client = null;
  try {
    client = await gadget.client();
  } catch (err) {
    replace(uiBox, h("p", { class: "muted" }, "The UI could not be loaded: ", errorNode(err)));
  }
  if (client) {
    ctx.onCleanup(mountGadgetFrame(uiBox, { title: `${name} UI`, source: client.source, gadget: () => gadget, app: currentApp }));
    ctx.onCleanup(releaseApp); // after the frame's bridge has closed
  } else if (client === null && !uiBox.firstChild) {
    replace(uiBox, h("p", { class: "muted" }, "This gadget has no UI: it ships no client.js. Its methods are below."));
  }

  replace(
    el,
    h(
      "div",
      { class: "gadget-head" },
      h("h2", null, name),
      h("span", { class: "muted" }, `version ${info.current} · ${info.grants.join(", ")}`),
    ),
    uiBox,
    h("div", { class: "columns" }, await callPanel(ctx, gadget), versionsPanel(ctx, gadget, info, build)),
    build ? await consolePanel(ctx, gadget) : null,
    build ? h("div", { class: "columns" }, deployPanel(ctx, gadget, info), uiPanel(ctx, gadget, info)) : null,
    build ? manageSection(ctx, gadget) : null,
  );
}

async function callPanel(ctx, gadget) {
  const bindings = await ctx.ws.listBindings().catch(() => []);
  const b = bindings.find((x) => x.gadget === ctx.name);
  const methods = b ? b.methods : [];
  const method = h("select", { name: "method" }, methods.map((m) => h("option", { value: m }, m)));
  const args = h("input", { name: "args", value: "[]", placeholder: '["buy milk"]' });
  const out = h("pre", { class: "output", id: "call-output" });
  const f = h(
    "form",
    { class: "card", id: "call" },
    h("h3", null, "Call a method"),
    h("label", null, h("span", null, "Method"), method),
    h("label", null, h("span", null, "Arguments (JSON array)"), args),
    h("button", { type: "submit" }, "Call"),
    out,
  );
  f.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const list = JSON.parse(args.value || "[]");
      if (!Array.isArray(list)) throw new Error("arguments must be a JSON array");
      const app = gadget.connect();
      let target = app;
      const path = method.value.split(".");
      for (const p of path.slice(0, -1)) target = target[p];
      out.textContent = json(await target[path.at(-1)](...list));
      out.classList.remove("error");
      clearErrors();
    } catch (err) {
      replace(out, errorNode(err));
      out.classList.add("error");
    }
  });
  return f;
}

/** The gadget's console lines as it writes them (gadget.logs needs the build role). */
async function consolePanel(ctx, gadget) {
  const { log, clear } = await liveConsole(ctx, (cb) => gadget.logs(cb), "gadget-console");
  log.classList.add("short");
  return h("section", { class: "card", id: "gadget-console-panel" },
    h("div", { class: "toolbar" }, h("h3", null, "Console"), h("span", { class: "muted" }, `what ${ctx.name} writes, as it writes it`), clear),
    log);
}

function versionsPanel(ctx, gadget, info, build) {
  return h(
    "section",
    { class: "card", id: "versions" },
    h("h3", null, "Versions"),
    h(
      "table",
      { class: "list" },
      h("tbody", null,
        info.versions
          .slice()
          .reverse()
          .map((v) =>
            h(
              "tr",
              { class: v.number === info.current ? "current" : "", dataset: { version: v.number } },
              h("td", null, `v${v.number}`),
              h("td", { class: "mono" }, v.sha256.slice(0, 12)),
              h("td", null, kib(v.size)),
              h("td", { class: "ui-cell", title: v.client ? `client.js sha256 ${v.client}` : "" }, v.client ? `UI ${v.client.slice(0, 12)}` : h("span", { class: "muted" }, "no UI")),
              h("td", null, when(v.created), v.chat ? h("div", { class: "muted version-chat" }, `from chat ${v.chat}`) : null),
              h(
                "td",
                null,
                v.number === info.current
                  ? "current"
                  : build
                    ? h("button", {
                        class: "small rollback",
                        text: "Roll back",
                        onclick: () =>
                          attempt(async () => {
                            await gadget.rollback(v.number);
                            toast(`${ctx.name} is at v${v.number}`);
                            ctx.refresh();
                          }),
                      })
                    : null,
              ),
            ),
          ),
      ),
    ),
  );
}

function deployPanel(ctx, gadget, info) {
  return h(
    "section",
    null,
    h("h3", null, "Deploy a new version"),
    deployForm({
      id: "deploy-version",
      withName: false,
      label: "Deploy new version",
      grants: info.grants,
      onCode: async ({ code, grants, client }) => {
        // A component's client.js goes with it (one version holds both); without one the new
        // version keeps the current UI.
        const next = await gadget.deploy(code, grants, client);
        toast(`${ctx.name} is at v${next.current}`);
        ctx.refresh();
      },
    }),
  );
}

/** Sets or removes the UI script alone: a new version with the same code. */
function uiPanel(ctx, gadget, info) {
  const file = h("input", { type: "file", name: "client", accept: ".js" });
  const current = info.versions.find((v) => v.number === info.current);
  const done = (next, what) => {
    toast(`${ctx.name} is at v${next.current}: ${what}`);
    ctx.refresh();
  };
  return h(
    "section",
    { id: "gadget-client" },
    h("h3", null, "Browser UI"),
    h(
      "div",
      { class: "card" },
      h("p", { class: "hint" }, "Change the UI alone: a new version with the same code, so that a rollback brings the earlier UI back."),
      h("label", null, h("span", null, "client.js"), file),
      h(
        "div",
        { class: "buttons" },
        h("button", {
          id: "set-client",
          text: "Set UI",
          onclick: () =>
            attempt(async () => {
              if (!file.files[0]) throw new Error("pick the UI script (client.js)");
              done(await gadget.setClient(await file.files[0].text()), "new UI");
            }),
        }),
        current && current.client
          ? h("button", {
              id: "remove-client",
              class: "danger",
              text: "Remove UI",
              onclick: () => attempt(async () => done(await gadget.setClient(""), "no UI")),
            })
          : null,
      ),
    ),
  );
}

function manageSection(ctx, gadget) {
  const out = h("pre", { class: "output" });
  return h(
    "section",
    { class: "card" },
    h("h3", null, "Manage"),
    h(
      "div",
      { class: "buttons" },
      h("button", {
        text: "Inspect",
        onclick: () => attempt(async () => (out.textContent = (await gadget.inspect()).join("\n"))),
      }),
      h("button", {
        text: "Rename",
        onclick: () => {
          const name = prompt(`New name for ${ctx.name}`, ctx.name);
          if (name)
            attempt(async () => {
              await gadget.rename(name);
              location.hash = `#/w/${ctx.wsId}/g/${encodeURIComponent(name)}`;
            });
        },
      }),
      h("button", {
        class: "danger",
        text: "Delete",
        onclick: () => {
          if (confirm(`Delete ${ctx.name} and its state?`))
            attempt(async () => {
              await gadget.delete();
              location.hash = `#/w/${ctx.wsId}`;
            });
        },
      }),
    ),
    out,
  );
}
