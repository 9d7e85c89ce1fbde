// Schedules (build role): a gadget method called with fixed arguments every N seconds or once at
// a time, as the person who made the schedule.
import { h, replace, attempt, toast, when, form, field } from "../dom.js";

/** How a schedule runs, as text. */
function cadence(s) {
  if (s.everyMs) return s.everyMs % 1000 === 0 ? `every ${s.everyMs / 1000} s` : `every ${s.everyMs} ms`;
  return "once";
}

export async function renderSchedules(el, ctx) {
  const { ws } = ctx;
  const [schedules, gadgets, bindings] = await Promise.all([ws.listSchedules(), ws.listGadgets(), ws.listBindings().catch(() => [])]);
  const methods = h("datalist", { id: "schedule-methods" });
  const gadget = h("select", { name: "gadget" }, gadgets.map((g) => h("option", { value: g.name }, g.name)));
  const showMethods = () => {
    const b = bindings.find((x) => x.gadget === gadget.value);
    replace(methods, (b ? b.methods : []).map((m) => h("option", { value: m })));
  };
  gadget.addEventListener("change", showMethods);
  showMethods();
  const every = h("label", { class: "when-every" }, h("span", null, "Every (seconds, at least 1)"), h("input", { name: "everySeconds", type: "number", min: 1, step: "any", value: 60 }));
  const at = h("label", { class: "when-at", hidden: true }, h("span", null, "At (your local time)"), h("input", { name: "at", type: "datetime-local", step: 1 }));
  const kind = h("select", { name: "kind" }, h("option", { value: "every" }, "repeatedly"), h("option", { value: "at" }, "once"));
  kind.addEventListener("change", () => {
    every.hidden = kind.value !== "every";
    at.hidden = kind.value !== "at";
  });
  replace(
    el,
    h("h3", null, "Schedules"),
    h("p", { class: "muted" }, "Each run calls the method as the schedule's creator; a failing run is recorded and the schedule goes on. Runs are in the audit log."),
    schedules.length === 0
      ? h("p", { class: "muted", id: "no-schedules" }, "No schedules.")
      : h("table", { class: "list", id: "schedules" },
          h("thead", null, h("tr", null, ["Call", "When", "Next run", "Runs", "Last run", "By", ""].map((t) => h("th", null, t)))),
          h("tbody", null,
            schedules.map((s) =>
              h("tr", { dataset: { schedule: s.id, gadget: s.gadget, method: s.method } },
                h("td", { class: "mono call" }, `${s.gadget}.${s.method}(${(s.args || []).map((a) => JSON.stringify(a)).join(", ")})`),
                h("td", null, cadence(s)),
                h("td", null, when(s.next)),
                h("td", null, String(s.runs || 0)),
                h("td", null, s.runs > 0 ? when(s.lastRun) : h("span", { class: "muted" }, "not yet"), s.lastError ? h("div", { class: "notice error" }, s.lastError) : null),
                h("td", null, s.creator),
                h("td", { class: "actions" },
                  h("button", { class: "small danger cancel", text: "Cancel", onclick: () => attempt(async () => {
                    await ws.cancelSchedule(s.id);
                    toast(`cancelled ${s.gadget}.${s.method}`);
                    ctx.refresh();
                  }) })))))),
    h("section", { class: "card" },
      h("h3", null, "Add a schedule"),
      gadgets.length === 0
        ? h("p", { class: "muted" }, "This workspace has no gadgets to schedule yet.")
        : form(
            { id: "add-schedule" },
            [
              h("label", null, h("span", null, "Gadget"), gadget),
              field("Method", { name: "method", required: true, list: "schedule-methods", placeholder: "add" }),
              methods,
              field("Arguments (a JSON array)", { name: "args", value: "[]", class: "mono" }),
              h("label", null, h("span", null, "Run"), kind),
              every,
              at,
            ],
            "Add schedule",
            async (v) => {
              let args;
              try {
                args = JSON.parse(v.args || "[]");
              } catch (err) {
                throw new Error(`the arguments are not JSON (${err.message}); write an array such as ["buy milk"]`);
              }
              if (!Array.isArray(args)) throw new Error('the arguments must be a JSON array, such as ["buy milk"] or []');
              let spec;
              if (v.kind === "at") {
                if (!v.at) throw new Error("pick the time of the run");
                spec = { at: new Date(v.at).toISOString() };
              } else {
                spec = { everyMs: Math.round(Number(v.everySeconds) * 1000) };
              }
              const made = await ws.schedule(v.gadget, v.method, args, spec);
              toast(`scheduled ${v.gadget}.${v.method}; next run ${when(made.next)}`);
              ctx.refresh();
            },
          )),
  );
}
