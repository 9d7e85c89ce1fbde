// Code Mode: run a snippet against the workspace's gadgets with executeCode.
import { h, replace, attempt, json } from "../dom.js";

const EXAMPLE = `// env holds your gadgets as bindings (see the list on the right).
export default async function (env, ctx) {
  console.log("bindings:", Object.keys(env).join(", "));
  return Object.keys(env).length;
}
`;

export async function renderCode(el, ctx) {
  const { ws } = ctx;
  const code = h("textarea", { class: "code", id: "code", spellcheck: "false", rows: 14 });
  code.value = EXAMPLE;
  const ts = h("input", { type: "checkbox", id: "code-ts" });
  const timeout = h("input", { type: "number", value: 5000, min: 1, max: 60000, step: 1000 });
  const result = h("div", { id: "code-result" });
  const run = h("button", { id: "code-run", text: "Run" });
  run.addEventListener("click", () =>
    attempt(async () => {
      run.disabled = true;
      try {
        const r = await ws.executeCode(code.value, { typescript: ts.checked, timeoutMs: Number(timeout.value) || 5000 });
        replace(
          result,
          h("div", { class: "console" },
            (r.console || []).map((l) => h("div", { class: `line ${l.level}` }, h("span", { class: "level" }, l.level), h("span", { class: "text" }, l.text)))),
          r.error
            ? h("pre", { class: "output error", id: "code-error" }, `${r.error.name}: ${r.error.message}\n${r.error.stack || ""}`)
            : h("pre", { class: "output", id: "code-value" }, json(r.value)),
        );
      } finally {
        run.disabled = false;
      }
    }),
  );
  const bindings = await ws.listBindings();
  const decl = h("pre", { class: "output" });
  replace(
    el,
    h("div", { class: "columns wide-left" },
      h("section", null,
        code,
        h("div", { class: "toolbar" }, run, h("label", { class: "check" }, ts, "TypeScript"), h("label", { class: "check" }, "timeout (ms) ", timeout)),
        result),
      h("section", { class: "card" },
        h("h3", null, "Bindings"),
        bindings.length === 0 ? h("p", { class: "muted" }, "No gadgets to call.") : null,
        h("ul", { class: "bindings" },
          bindings.map((b) =>
            h("li", null,
              h("a", { href: "#", onclick: (ev) => {
                ev.preventDefault();
                attempt(async () => (decl.textContent = await ws.describeBinding(b.name)));
              } }, `env.${b.name}`),
              h("span", { class: "muted" }, ` (${b.gadget}): ${b.methods.join(", ")}`)))),
        decl)),
  );
}
