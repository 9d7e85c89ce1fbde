// Gadget UIs: a gadget's client.js runs in an iframe sandboxed to "allow-scripts" (an opaque
// origin: no cookies, storage or DOM of the shell) showing the host's gadget frame document
// (host/shell/frame.html), whose own Content-Security-Policy blocks every fetch, socket, form,
// frame and outside image, and whose first script removes WebRTC. That script says hello; the
// shell answers with two scripts to run: the prelude (frame.js), then client.js. The prelude
// posts one end of a MessageChannel; the shell accepts it only from that frame's window with
// origin "null" and serves on it a bridge that reaches this one gadget only: its exported
// methods (through connect()) and subscribe(cb). Nothing else of the session is reachable from
// the frame. A UI holds at most MAX_SUBSCRIPTIONS subscriptions; they end on the server when
// the UI is unmounted or its frame makes a new handshake (a reload). See docs/gadget-ui.md.
import { newMessagePortRpcSession, RpcTarget } from "capnweb";
import prelude from "atelier:frame-prelude";

const FRAME_URL = "/assets/gadget-frame.html";
const HELLO = "atelier:gadget-frame";
const SCRIPTS = "atelier:gadget-scripts";
const HANDSHAKE = "atelier:gadget-handshake";

/** The most subscriptions one gadget UI may hold at once (including those being made). */
const MAX_SUBSCRIPTIONS = 64;

/**
 * Ends a subscription on the server and releases its stub. If the shell's session has ended,
 * the server ended the subscription with it: there is nothing more to do.
 */
async function cancelOnServer(sub) {
  try {
    await sub.cancel();
  } catch {
    // the session ended, and the server's subscriptions with it
  } finally {
    sub[Symbol.dispose]();
  }
}

/**
 * A subscription as the frame holds it: cancel(), or disposing its stub, ends it on the server.
 * stop is the bridge's own handle on it.
 */
class UiSubscription extends RpcTarget {
  #stop;
  constructor(stop) {
    super();
    this.#stop = stop;
  }
  cancel() {
    return this.#stop();
  }
  [Symbol.dispose]() {
    this.#stop();
  }
}

/**
 * Serves a bridge on port: the object the frame's `gadget` stub reaches. subscribe(cb) is the
 * gadget's event subscription; any other method name goes to the gadget's connect() stub, so
 * the server decides what exists (the gadget's exports) and checks the caller's role on every
 * call. gadget() and app() return the page's stubs (a new session re-renders the page, which
 * unmounts the frame). The bridge keeps the Subscriptions it hands out, at most MAX_SUBSCRIPTIONS; they
 * end on the server when the session on port ends, from the frame's side or through the
 * returned function, which ends it and closes port.
 */
function serve(port, gadget, app) {
  const stops = new Set(); // of the subscriptions handed out, and of those being made
  let closed = false;
  const refuseClosed = () => new Error("subscribe: this gadget UI was closed");
  const close = () => {
    closed = true;
    for (const stop of stops) stop();
  };
  class GadgetBridge extends RpcTarget {
    async subscribe(cb) {
      if (closed) throw refuseClosed();
      if (stops.size >= MAX_SUBSCRIPTIONS) {
        throw new Error(`subscribe: a gadget UI may hold at most ${MAX_SUBSCRIPTIONS} subscriptions at once; cancel one first`);
      }
      const pending = () => {};
      stops.add(pending);
      let sub;
      try {
        sub = await gadget().subscribe(cb);
      } finally {
        stops.delete(pending);
      }
      let done = null;
      const stop = () => {
        if (!done) {
          stops.delete(stop);
          done = cancelOnServer(sub);
        }
        return done;
      };
      if (closed) {
        stop();
        throw refuseClosed();
      }
      stops.add(stop);
      return new UiSubscription(stop);
    }
    // The session ended (capnweb disposes its main target).
    [Symbol.dispose]() {
      close();
    }
  }
  const target = new Proxy(new GadgetBridge(), {
    get(target, key, receiver) {
      if (typeof key !== "string" || key in target) return Reflect.get(target, key, receiver);
      if (key === "then") return undefined; // never look like a promise
      return app()[key];
    },
  });
  const frame = newMessagePortRpcSession(port, target);
  return () => {
    close();
    frame[Symbol.dispose](); // ends the session and closes port
  };
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
  let closeBridge = null;
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
    if (closeBridge) closeBridge(); // the frame reloaded itself: the old session ends
    closeBridge = serve(ev.ports[0], gadget, app);
  };
  window.addEventListener("message", onMessage);
  iframe.src = FRAME_URL;
  container.append(iframe);
  return () => {
    window.removeEventListener("message", onMessage);
    if (closeBridge) closeBridge();
    iframe.remove();
  };
}
