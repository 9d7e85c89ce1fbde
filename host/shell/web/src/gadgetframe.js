// Gadget UIs: a gadget's client.js runs in an iframe sandboxed to "allow-scripts" (an opaque
// origin: no cookies, storage or DOM of the shell) under a Content-Security-Policy that blocks
// every fetch, socket, form, frame and outside image. The frame's prelude (frame.js) posts one
// end of a MessageChannel; the shell accepts it only from that frame's window with origin "null"
// and serves on it a bridge that reaches this one gadget only: its exported methods (through
// connect()) and subscribe(cb). Nothing else of the session is reachable from the frame.
import { newMessagePortRpcSession, RpcTarget } from "capnweb";
import prelude from "atelier:frame-prelude";

const HANDSHAKE = "atelier:gadget-handshake";

/** The frame's own policy (the shell's policy applies on top: srcdoc frames inherit it). */
export const FRAME_CSP = [
  "default-src 'none'",
  "script-src data: 'unsafe-inline'",
  "style-src data: 'unsafe-inline'",
  "img-src data:",
  "media-src data:",
  "font-src data:",
  "connect-src 'none'",
  "frame-src 'none'",
  "child-src 'none'",
  "worker-src 'none'",
  "manifest-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

const FRAME_STYLE = `body{font:14px/1.45 system-ui,"Liberation Sans",sans-serif;margin:12px;color:#1d2330}
.atelier-error{color:#a4161a;background:#fde8e8;padding:8px;white-space:pre-wrap}`;

/** The shell page's script nonce: srcdoc frames inherit the page's policy, which needs it. */
function pageNonce() {
  const s = document.querySelector("script[nonce]");
  return s ? s.nonce : "";
}

const dataURL = (src) => "data:text/javascript;charset=utf-8," + encodeURIComponent(src);

/** The frame's document: its policy, the prelude, then client.js, both as module scripts. */
export function frameDocument(clientSource) {
  const nonce = pageNonce();
  return `<!doctype html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${FRAME_CSP}">
<style>${FRAME_STYLE}</style>
<script type="module" nonce="${nonce}" src="${dataURL(prelude)}"></script>
<script type="module" nonce="${nonce}" src="${dataURL(clientSource)}"></script>
</head><body></body></html>`;
}

/**
 * The object the frame's `gadget` stub reaches. subscribe(cb) is the gadget's event
 * subscription; any other method name goes to the gadget's connect() stub, so the server decides
 * what exists (the gadget's exports) and checks the caller's role on every call. gadget() and
 * app() return the current session's stubs, so the bridge survives reconnects.
 */
function bridge(gadget, app) {
  class GadgetBridge extends RpcTarget {
    subscribe(cb) {
      return gadget().subscribe(cb);
    }
  }
  return new Proxy(new GadgetBridge(), {
    get(target, key, receiver) {
      if (typeof key !== "string" || key in target) return Reflect.get(target, key, receiver);
      if (key === "then") return undefined; // never look like a promise
      return app()[key];
    },
  });
}

/**
 * Mounts a gadget UI into container. gadget() returns the current Gadget stub, app() its
 * connect() stub. Returns a function that unmounts it and closes the bridge.
 */
export function mountGadgetFrame(container, { title, source, gadget, app }) {
  const iframe = document.createElement("iframe");
  iframe.className = "gadget-frame";
  iframe.title = title;
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.setAttribute("referrerpolicy", "no-referrer");
  let port = null;
  const target = bridge(gadget, app);
  const onMessage = (ev) => {
    // Only this frame's window, only an opaque origin, only the handshake with one port.
    if (ev.source !== iframe.contentWindow || ev.origin !== "null") return;
    if (ev.data !== HANDSHAKE || ev.ports.length !== 1) return;
    if (port) port.close(); // the frame reloaded itself: the old session ends
    port = ev.ports[0];
    newMessagePortRpcSession(port, target);
  };
  window.addEventListener("message", onMessage);
  iframe.srcdoc = frameDocument(source);
  container.append(iframe);
  return () => {
    window.removeEventListener("message", onMessage);
    if (port) port.close();
    iframe.remove();
  };
}
