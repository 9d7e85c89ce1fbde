// Gadget UIs: a gadget's client.js runs in an iframe sandboxed to "allow-scripts" (an opaque
// origin: no cookies, storage or DOM of the shell) showing the host's gadget frame document
// (host/shell/frame.html), whose own Content-Security-Policy blocks every fetch, socket, form,
// frame and outside image, and whose first script removes WebRTC. That script says hello; the
// shell answers with two scripts to run: the prelude (frame.js), then client.js. The prelude
// posts one end of a MessageChannel; the shell accepts it only from that frame's window with
// origin "null" and serves on it a bridge that reaches this one gadget only: its exported
// methods (through connect()) and subscribe(cb). Nothing else of the session is reachable from
// the frame. See docs/gadget-ui.md.
import { newMessagePortRpcSession, RpcTarget } from "capnweb";
import prelude from "atelier:frame-prelude";

const FRAME_URL = "/assets/gadget-frame.html";
const HELLO = "atelier:gadget-frame";
const SCRIPTS = "atelier:gadget-scripts";
const HANDSHAKE = "atelier:gadget-handshake";

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
    // Only this frame's window, only an opaque origin.
    if (ev.source !== iframe.contentWindow || ev.origin !== "null") return;
    if (ev.data === HELLO) {
      // An opaque origin can only be addressed as "*"; the scripts are no secret.
      ev.source.postMessage({ type: SCRIPTS, scripts: [prelude, source] }, "*");
      return;
    }
    // Only the handshake with one port.
    if (ev.data !== HANDSHAKE || ev.ports.length !== 1) return;
    if (port) port.close(); // the frame reloaded itself: the old session ends
    port = ev.ports[0];
    newMessagePortRpcSession(port, target);
  };
  window.addEventListener("message", onMessage);
  iframe.src = FRAME_URL;
  container.append(iframe);
  return () => {
    window.removeEventListener("message", onMessage);
    if (port) port.close();
    iframe.remove();
  };
}
