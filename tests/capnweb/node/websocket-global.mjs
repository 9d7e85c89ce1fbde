// Node 20 has no global WebSocket (without --experimental-websocket), but capnweb needs one on
// both sides: `newWebSocketRpcSession(url)` does `new WebSocket(url)`, and its WebSocketTransport
// reads the global `WebSocket.CONNECTING` even when it wraps a server-side socket. Installing the
// `ws` package's class fixes both. Import this module before importing capnweb.
import { WebSocket } from "ws";

if (typeof globalThis.WebSocket === "undefined") {
  globalThis.WebSocket = WebSocket;
}
