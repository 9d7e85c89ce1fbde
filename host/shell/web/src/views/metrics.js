// The metrics dashboard: call rate, latency and loaded instances per gadget, from
// Workspace.metrics() polled every few seconds, drawn as SVG line charts.
import { h, replace, errorNode } from "../dom.js";
import { COLORS, lineChart } from "../charts.js";

const POLL_MS = 2000;
const ms = (v) => `${+Number(v).toPrecision(3)} ms`;
const KEEP = 90; // samples: three minutes

export async function renderMetrics(el, ctx) {
  const { ws } = ctx;
  const samples = []; // {t, byName: Map(name -> gadget metrics)}
  const charts = h("div", { class: "charts", id: "metrics-charts" });
  const table = h("div", { id: "metrics-table" });
  const status = h("p", { class: "muted" });

  const draw = () => {
    if (samples.length === 0) return;
    const last = samples.at(-1);
    const names = [...last.byName.keys()].sort();
    const t0 = samples[0].t;
    const t1 = last.t;
    const rate = names.map((name) => ({
      name,
      points: samples.slice(1).flatMap((s, i) => {
        const prev = samples[i].byName.get(name);
        const cur = s.byName.get(name);
        if (!prev || !cur) return [];
        return [[s.t, Math.max(0, cur.calls - prev.calls) / ((s.t - samples[i].t) / 1000)]];
      }),
    }));
    // One line per gadget of a field of its metrics, at each sample that has the gadget.
    const series = (field) =>
      names.map((name) => ({
        name,
        points: samples.flatMap((s) => (s.byName.has(name) ? [[s.t, s.byName.get(name)[field]]] : [])),
      }));
    const p90 = series("p90Ms");
    const instances = series("instances");
    const legend = h("ul", { class: "legend" }, names.map((n, i) => h("li", null, h("span", { class: "swatch", style: `background:${COLORS[i % COLORS.length]}` }), n)));
    replace(
      charts,
      h("figure", { id: "chart-rate" }, h("figcaption", null, "Calls per second"), lineChart({ title: "calls per second", series: rate, t0, t1, unit: "/s" })),
      h("figure", { id: "chart-latency" }, h("figcaption", null, "Latency p90"), lineChart({ title: "latency p90", series: p90, t0, t1, unit: "ms" })),
      h("figure", { id: "chart-instances" }, h("figcaption", null, "Live instances"), lineChart({ title: "live instances", series: instances, t0, t1, unit: "" })),
      legend,
    );
    replace(
      table,
      h("table", { class: "list" },
        h("thead", null, h("tr", null, ["Gadget", "Calls", "Errors", "p50", "p90", "p99", "Instances live", "Instances started"].map((t) => h("th", null, t)))),
        h("tbody", null,
          names.map((n) => {
            const g = last.byName.get(n);
            return h("tr", { dataset: { gadget: n } },
              h("td", null, n), h("td", null, g.calls), h("td", null, g.errors),
              h("td", null, ms(g.p50Ms)), h("td", null, ms(g.p90Ms)), h("td", null, ms(g.p99Ms)),
              h("td", { class: "instances" }, g.instances), h("td", null, g.started));
          }))),
    );
  };

  const poll = async () => {
    try {
      const m = await ws.metrics();
      samples.push({ t: Date.now(), byName: new Map(m.gadgets.map((g) => [g.name, g])) });
      if (samples.length > KEEP) samples.shift();
      status.textContent = `Server up ${Math.round(m.uptimeSeconds)} s; polled every ${POLL_MS / 1000} s.`;
      draw();
    } catch (err) {
      replace(status, "Metrics are not available: ", errorNode(err));
    }
  };
  await poll();
  const timer = setInterval(poll, POLL_MS);
  ctx.onCleanup(() => clearInterval(timer));
  replace(el, status, charts, table);
}
