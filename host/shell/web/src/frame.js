// The prelude of every gadget frame: the frame document's own script (host/shell/frame.html)
// runs it, then the gadget's client.js, in the sandboxed, opaque-origin iframe. It hands the
// shell one end of a MessageChannel and makes the other end a Cap'n Web session whose main stub
// is the global `gadget` (the gadget's exported methods and subscribe(cb)); `RpcTarget` is
// global too, for callback objects. See docs/gadget-ui.md.
import { newMessagePortRpcSession, RpcTarget } from "capnweb";

const HANDSHAKE = "atelier:gadget-handshake";

const channel = new MessageChannel();
window.parent.postMessage(HANDSHAKE, "*", [channel.port2]);
const gadget = newMessagePortRpcSession(channel.port1);

Object.defineProperty(globalThis, "gadget", { value: gadget, enumerable: true });
Object.defineProperty(globalThis, "RpcTarget", { value: RpcTarget, enumerable: true });

function show(text) {
  const pre = document.createElement("pre");
  pre.className = "atelier-error";
  pre.textContent = text;
  document.body.prepend(pre);
}

addEventListener("error", (ev) => show(`client.js: ${ev.message || ev.error}`));
addEventListener("unhandledrejection", (ev) => {
  const r = ev.reason;
  show(`client.js: unhandled rejection: ${(r && r.message) || r}`);
});
