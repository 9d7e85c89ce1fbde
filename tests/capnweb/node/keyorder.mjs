// Key order check: the official client sends objects whose keys are not sorted and prints, as
// one JSON line, what the server gives back (JSON.stringify shows the keys in their order).
//
// Usage: node keyorder.mjs --url http://HOST:PORT
// Prints {"echo": ..., "nested": ..., "repeated": ..., "mapped": [...]}: echo({b:1, a:2}),
// echo of nested objects and arrays, echo of the object JSON.parse makes of a text repeating a
// key, and getUserIds().map(id => ({id, hi: api.getUserName(id)})).
import "./websocket-global.mjs";
import { newWebSocketRpcSession } from "capnweb";
import { parseArgs, endpoints } from "./args.mjs";

const opts = parseArgs({ url: "" });
if (!opts.url) throw new Error("--url http://HOST:PORT is required");
const api = newWebSocketRpcSession(endpoints(opts.url).ws);
try {
  const out = {
    echo: await api.echo({ b: 1, a: 2 }),
    nested: await api.echo({ z: { y: [{ d: 1, c: [{ f: 0, e: 0 }] }], x: null }, a: [] }),
    repeated: await api.echo(JSON.parse('{"b":1,"a":2,"b":3}')),
    mapped: await api.getUserIds().map((id) => ({ id, hi: api.getUserName(id) })),
  };
  console.log(JSON.stringify(out));
} finally {
  api[Symbol.dispose]();
}
