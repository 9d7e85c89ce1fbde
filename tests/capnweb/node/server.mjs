// The official capnweb Node server, serving the conformance API (api.mjs):
//   WebSocket sessions at /ws, HTTP batch sessions at POST /batch.
// Usage: node server.mjs [--host 127.0.0.1] [--port 0] [--trace]
// The first stdout line is exactly `listening on http://HOST:PORT`. With --trace every frame and
// batch body is logged to stderr. SIGTERM/SIGINT stop the server.
import "./websocket-global.mjs";
import http from "node:http";
import { WebSocketServer } from "ws";
import { newWebSocketRpcSession, nodeHttpBatchRpcResponse } from "capnweb";
import { Api } from "./api.mjs";
import { parseArgs } from "./args.mjs";

const opts = parseArgs({ host: "127.0.0.1", port: 0, trace: false });
const trace = opts.trace ? (line) => process.stderr.write(line + "\n") : null;

const httpServer = http.createServer(async (req, res) => {
  if (new URL(req.url, "http://x").pathname !== "/batch") {
    res.writeHead(404).end();
    return;
  }
  try {
    await nodeHttpBatchRpcResponse(req, res, new Api(), {
      headers: { "Access-Control-Allow-Origin": "*" },
    });
  } catch (err) {
    trace?.(`batch error: ${err?.stack ?? err}`);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});

const wss = new WebSocketServer({ noServer: true });
httpServer.on("upgrade", (req, socket, head) => {
  if (new URL(req.url, "http://x").pathname !== "/ws") {
    socket.end("HTTP/1.1 404 Not Found\r\n\r\n");
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => {
    if (trace) {
      const send = ws.send.bind(ws);
      ws.send = (data, ...rest) => { trace(`S->C ${data}`); return send(data, ...rest); };
      ws.on("message", (data) => trace(`C->S ${data}`));
    }
    newWebSocketRpcSession(ws, new Api());
  });
});

await new Promise((resolve) => httpServer.listen(opts.port, opts.host, resolve));
const { address, port } = httpServer.address();
const host = address.includes(":") ? `[${address}]` : address;
process.stdout.write(`listening on http://${host}:${port}\n`);

function shutdown() {
  for (const ws of wss.clients) ws.terminate();
  httpServer.close(() => process.exit(0));
  httpServer.closeAllConnections();
}
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
