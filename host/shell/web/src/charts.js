// Small SVG line charts for the metrics dashboard.

const NS = "http://www.w3.org/2000/svg";
const W = 360;
const H = 140;
const PAD = { left: 44, right: 8, top: 10, bottom: 20 };
export const COLORS = ["#2f6fde", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#0b7285", "#c2255c", "#5c940d"];

function el(tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

/**
 * A line chart of series [{name, points: [[t, y], ...]}] over the time window [t0, t1] (ms).
 * unit labels the y axis values.
 */
export function lineChart({ title, series, t0, t1, unit }) {
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-label": title });
  const ymax = niceMax(Math.max(0, ...series.flatMap((s) => s.points.map((p) => p[1]))));
  const x = (t) => PAD.left + ((t - t0) / Math.max(1, t1 - t0)) * (W - PAD.left - PAD.right);
  const y = (v) => H - PAD.bottom - (v / ymax) * (H - PAD.top - PAD.bottom);
  for (const f of [0, 0.5, 1]) {
    const v = ymax * f;
    svg.append(el("line", { x1: PAD.left, x2: W - PAD.right, y1: y(v), y2: y(v), class: "grid" }));
    svg.append(el("text", { x: PAD.left - 4, y: y(v) + 4, "text-anchor": "end", class: "axis" }, `${+v.toPrecision(3)}${unit}`));
  }
  svg.append(el("text", { x: PAD.left, y: H - 4, class: "axis" }, `${Math.round((t1 - t0) / 1000)} s`));
  svg.append(el("text", { x: W - PAD.right, y: H - 4, "text-anchor": "end", class: "axis" }, "now"));
  series.forEach((s, i) => {
    if (s.points.length === 0) return;
    const d = s.points.map((p, j) => `${j ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
    svg.append(el("path", { d, fill: "none", stroke: COLORS[i % COLORS.length], "stroke-width": 2 }));
  });
  return svg;
}
