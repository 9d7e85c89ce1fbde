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

// What each error code of the API (docs/api.md, "Errors") means, in a sentence for people.
const SENTENCES = {
  UNAUTHORIZED: "You are not signed in, or your sign-in is not valid any more.",
  FORBIDDEN: "You don't have permission to do that.",
  NOT_FOUND: "That does not exist, or you cannot see it.",
  INVALID_ARGUMENT: "Something you entered is not valid.",
  CONFLICT: "That clashes with something that exists or changed meanwhile.",
  FAILED_PRECONDITION: "That cannot be done in the current state.",
  RESOURCE_EXHAUSTED: "A limit of this server was reached.",
  GADGET_ERROR: "The gadget failed.",
  INTERNAL: "Something went wrong on the server.",
  MOVED: "The workspace moved to another server node; try again.",
  UNAVAILABLE: "The server cannot do that right now; try again shortly.",
};

/**
 * Describes an error for people: {sentence, detail, code}. sentence says what the code means
 * (empty for an error without a code), detail is the message (what went wrong, what to do), code
 * the API's error code ("" when it has none). Every view shows errors through this.
 */
export function describeError(err) {
  if (!err) return { sentence: "Something went wrong.", detail: "", code: "" };
  const detail = err.message || String(err);
  const code = typeof err.code === "string" ? err.code : "";
  const sentence = code ? SENTENCES[code] || "The server refused that." : "";
  return { sentence, detail, code };
}

/** An error as one line of text: the sentence, the message, and the code in parentheses. */
export function errorText(err) {
  const { sentence, detail, code } = describeError(err);
  return [sentence, detail, code ? `(${code})` : ""].filter(Boolean).join(" ");
}

/** An error as an element: the sentence, the message, and the code in small print. */
export function errorNode(err) {
  const { sentence, detail, code } = describeError(err);
  return h("span", { class: "error-text" },
    sentence ? h("span", { class: "error-sentence" }, sentence) : null,
    sentence && detail ? " " : null,
    detail ? h("span", { class: "error-detail" }, detail) : null,
    code ? [" ", h("small", { class: "error-code" }, code)] : null);
}

let toasts;

/** Shows a message (text or a node) for a few seconds; kind "error" or "info". */
export function toast(content, kind = "info") {
  if (!toasts) {
    toasts = h("div", { class: "toasts", role: "status" });
    document.body.append(toasts);
  }
  const t = h("div", { class: `toast ${kind}` }, content);
  toasts.append(t);
  setTimeout(() => t.remove(), kind === "error" ? 8000 : 4000);
}

/** Removes the error toasts shown: called when an action succeeds, so none goes stale. */
export function clearErrors() {
  if (toasts) for (const t of toasts.querySelectorAll(".toast.error")) t.remove();
}

/**
 * Runs fn, showing a rejection as an error toast; returns fn's result or undefined. Success
 * clears the error toasts of earlier attempts.
 */
export async function attempt(fn) {
  try {
    const result = await fn();
    clearErrors();
    return result;
  } catch (err) {
    toast(errorNode(err), "error");
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
