// Small DOM helpers: element creation, errors as text, toasts.

/**
 * Creates an element. props: "class", "text", event handlers as onX functions, "dataset" object,
 * everything else an attribute (false/null/undefined leave it out). Children may be nodes,
 * strings, numbers, arrays or null.
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value") el.value = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

/** Replaces el's children. */
export function replace(el, ...children) {
  el.textContent = "";
  append(el, children);
  return el;
}

/** An error as one line: "CODE: message". */
export function errorText(err) {
  if (!err) return "unknown error";
  const msg = err.message || String(err);
  return err.code ? `${err.code}: ${msg}` : msg;
}

let toasts;

/** Shows a message for a few seconds; kind "error" or "info". */
export function toast(text, kind = "info") {
  if (!toasts) {
    toasts = h("div", { class: "toasts", role: "status" });
    document.body.append(toasts);
  }
  const t = h("div", { class: `toast ${kind}`, text });
  toasts.append(t);
  setTimeout(() => t.remove(), kind === "error" ? 8000 : 4000);
}

/** Runs fn, showing a rejection as an error toast; returns fn's result or undefined. */
export async function attempt(fn) {
  try {
    return await fn();
  } catch (err) {
    toast(errorText(err), "error");
    return undefined;
  }
}

/** A form whose submit runs fn(values) (values by input name); the button is disabled meanwhile. */
export function form(props, fields, label, fn) {
  const button = h("button", { type: "submit" }, label);
  const f = h("form", props, fields, button);
  f.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const values = Object.fromEntries(new FormData(f));
    button.disabled = true;
    try {
      await attempt(() => fn(values));
    } finally {
      button.disabled = false;
    }
  });
  return f;
}

/** A labelled input. */
export function field(label, props) {
  return h("label", null, h("span", null, label), h("input", props));
}

/** A labelled select of [value, text] options. */
export function select(label, name, options) {
  return h("label", null, h("span", null, label), h("select", { name }, options.map(([v, t]) => h("option", { value: v }, t))));
}

/** kib formats a byte count as whole KiB, rounded up ("3 KiB"). */
export function kib(n) {
  return `${Math.ceil(Number(n) / 1024)} KiB`;
}

/** A time (ms since the epoch, RFC 3339 text or Date) as local text. */
export function when(t) {
  if (t === undefined || t === null || t === "") return "";
  const d = t instanceof Date ? t : new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}

/** A JSON value as indented text (bigints as numbers' text). */
export function json(v) {
  return JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() : x), 2) ?? "undefined";
}
