// Runs every part-A scenario of capnweb/testdata/transcripts.txt (ws-1..ws-22, batch-1..3)
// with the official capnweb client against a server that serves the conformance API (api.mjs),
// checks each result, and records the client's traffic.
//
// Usage: node scenarios.mjs --url http://HOST:PORT [--record] [--only ws-1,batch-2] [--timeout MS]
//
// Prints one JSON report on stdout: {url, ok, scenarios: [{name, ok, result?, error?, expected,
// c2s?, s2c?}]}. `result` is the JSON text of the value the client got, `error` is
// "<ErrorClass>: <message>" when the call threw; `expected` lists the accepted outcomes in the
// notation of the transcript's "client result:" / "client caught:" notes. Results are compared
// as JSON values: the order of object members does not matter. With --record each scenario also lists the messages
// the client sent (c2s) and received (s2c), to be compared with the transcript's C->S lines. The
// exit status is 1 when any scenario failed.
import "./websocket-global.mjs";
import { Recording, recordInto } from "./recorder.mjs";
import { parseArgs, endpoints } from "./args.mjs";

const { RpcTarget, newWebSocketRpcSession, newHttpBatchRpcSession } = await import("capnweb");

const opts = parseArgs({ url: "", record: false, only: "", timeout: 5000 });
if (!opts.url) throw new Error("--url http://HOST:PORT is required");
const urls = endpoints(opts.url);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class Listener extends RpcTarget {
  onEvent(name) { return `got ${name}`; }
}

/** Renders special values the way the transcript's ws-12 note does. */
function describeSpecials(r) {
  return Object.fromEntries(Object.entries(r).map(([k, v]) =>
    [k, v instanceof Error ? `${v.name}: ${v.message}` :
        v instanceof Uint8Array ? `bytes:${[...v]}` :
        v instanceof Date ? `date:${v.getTime()}` :
        typeof v === "number" && !isFinite(v) ? String(v) :
        v === undefined ? "undefined" : v]));
}

// Each scenario: [name, transport, accepted outcome(s), client code]. An outcome is
// {result: <value>} or {error: "<ErrorClass>: <message>"}.
const scenarios = [
  ["ws-1", "ws", { result: "Hello, World!" }, async (api) => await api.hello("World")],
  ["ws-2", "ws", { result: [3, 7] }, async (api) => [await api.add(1, 2), await api.add(3, 4)]],
  ["ws-3", "ws", { result: 15 }, async (api) => {
    const counter = api.makeCounter(10);
    const v = await counter.increment(5);
    counter[Symbol.dispose]();
    return v;
  }],
  ["ws-4", "ws", { result: [2, 2] }, async (api) => {
    const c = await api.makeCounter(1);
    const a = await c.increment();
    const b = await c.value;
    c[Symbol.dispose]();
    return [a, b];
  }],
  ["ws-5", "ws", { result: "Hello, bob!" }, async (api) => await api.hello(api.getUser(2).name)],
  ["ws-6", "ws", { result: 43 }, async (api) => await api.callMeBack((x) => x * 2, 21)],
  ["ws-7", "ws", { result: ["got first", "got second"] },
    async (api) => await api.notifyTwice(new Listener())],
  ["ws-8", "ws", { result: [{ id: 1, name: "alice" }, { id: 2, name: "bob" }, { id: 3, name: "carol" }] },
    async (api) => await api.getUserIds().map((id) => ({ id, name: api.getUserName(id) }))],
  ["ws-9", "ws", { result: ["Hello, alice!", null] }, async (api) => [
    await api.getUser(1).map((u) => api.hello(u.name)),
    await api.getNothing().map((x) => api.hello(x)),
  ]],
  ["ws-10", "ws", { error: "RangeError: bad thing happened" }, async (api) => await api.fail()],
  ["ws-11", "ws", { error: "TypeError: 'noSuchMethod' is not a function." },
    async (api) => await api.noSuchMethod()],
  ["ws-12", "ws", {
    result: {
      arr: [1, "two", [3]], date: "date:1749342170815", bytes: "bytes:1,2,3,250",
      big: "12345678901234567890n", undef: "undefined", nul: null, inf: "Infinity",
      ninf: "-Infinity", nan: "NaN", err: "TypeError: boom",
    },
  }, async (api) => describeSpecials(await api.echo({
    arr: [1, "two", [3]],
    date: new Date(1749342170815),
    bytes: new Uint8Array([1, 2, 3, 250]),
    big: 12345678901234567890n,
    undef: undefined,
    nul: null,
    inf: Infinity, ninf: -Infinity, nan: NaN,
    err: new TypeError("boom"),
  }))],
  ["ws-13", "ws", { result: "1.0" }, async (api) => await api.version],
  // The reference server disposes stubs received as arguments when the call returns, so echo()
  // hands back a dead stub (transcript ws-14). A server that returns the live object lets the
  // client finish (testdata/alternatives.txt).
  ["ws-14", "ws", [{ error: "Error: Attempted to use an RPC StubHook after it was disposed." }, { result: 8 }],
    async (api) => {
      const c = await api.makeCounter(7);
      const d = await api.echo(c);
      const v = await d.increment(1);
      d[Symbol.dispose]();
      c[Symbol.dispose]();
      return v;
    }],
  ["ws-15", "ws", { result: 107 }, async (api) => {
    const c = await api.makeCounter(7);
    const v = await api.useCounter(c);
    c[Symbol.dispose]();
    return v;
  }],
  ["ws-16", "ws", { error: "Error: nope" }, async (api) => await api.failWithCode()],
  ["ws-17", "ws", { result: [["alice", "bob"], ["carol"]] },
    async (api) => await api.getTeams().map((t) => t.memberIds.map((id) => api.getUserName(id)))],
  ["ws-18", "ws", { result: ["subscribed", 10, 20, "unsubscribed", [1, 2]] }, async (api) => {
    const seen = [];
    const r0 = await api.subscribe((x) => { seen.push(x); return x * 10; });
    const r1 = await api.fire(1);
    const r2 = await api.fire(2);
    const r3 = await api.unsubscribe();
    return [r0, r1, r2, r3, seen];
  }],
  ["ws-19", "ws", { result: ["chunk-a", "chunk-b"] }, async (api) => {
    const s = await api.getStream();
    const chunks = [];
    for await (const c of s) chunks.push(c);
    return chunks;
  }],
  ["ws-20", "ws", { result: "disposed" }, async (api) => {
    const p = api.hello("x");
    p[Symbol.dispose]();
    await sleep(50);
    return "disposed";
  }],
  ["ws-21", "ws", { error: "RangeError: bad thing happened" }, async (api) => {
    const p = api.fail();
    try { return await p.someMethod(1); } finally { p[Symbol.dispose](); }
  }],
  ["ws-22", "ws", { result: [[[1, 2], { a: [3] }, []], "box", 6] }, async (api) => {
    const e = await api.echo([[1, 2], { a: [3] }, []]);
    const o = await api.getCounterBox(5);
    const v = await o.counter.increment(1);
    o.counter[Symbol.dispose]();
    return [e, o.label, v];
  }],
  ["batch-1", "batch", { result: "Hello, World!" }, async (api) => await api.hello("World")],
  ["batch-2", "batch", { result: [15, "Hello, carol!"] }, async (api) => {
    const c = api.makeCounter(10);
    const p1 = c.increment(5);
    const p2 = api.hello(api.getUser(3).name);
    return await Promise.all([p1, p2]);
  }],
  ["batch-3", "batch", { result: ["alice", "bob", "carol"] },
    async (api) => await api.getUserIds().map((id) => api.getUserName(id))],
];

const toJSON = (v) => JSON.stringify(v, (k, x) => (typeof x === "bigint" ? `${x}n` : x));

/** JSON text with object members sorted by name, so that member order does not matter. */
const canonical = (json) => JSON.stringify(JSON.parse(json), (k, x) =>
  x && typeof x === "object" && !Array.isArray(x)
    ? Object.fromEntries(Object.keys(x).sort().map((key) => [key, x[key]])) : x);

/** Renders an outcome in the notation of the transcript notes. */
const describe = (o) => ("result" in o ? `client result: ${toJSON(o.result)}` : `client caught: ${o.error}`);

function matches(report, outcome) {
  if ("error" in outcome) return report.error === outcome.error;
  return report.result !== undefined && canonical(report.result) === canonical(toJSON(outcome.result));
}

function withTimeout(promise, ms) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function run([name, transport, accepted, fn]) {
  const outcomes = Array.isArray(accepted) ? accepted : [accepted];
  const rec = new Recording();
  recordInto(rec);
  const api = transport === "ws" ? newWebSocketRpcSession(urls.ws) : newHttpBatchRpcSession(urls.batch);
  const report = { name, ok: false };
  try {
    report.result = toJSON(await withTimeout(fn(api), opts.timeout));
  } catch (err) {
    report.error = `${err?.constructor?.name}: ${err?.message}`;
  }
  // Let trailing traffic (releases, stream acknowledgements) go out before closing the session.
  await rec.quiet(100, 2000);
  if (transport === "ws") api[Symbol.dispose]();
  recordInto(null);
  report.expected = outcomes.map(describe);
  report.ok = outcomes.some((o) => matches(report, o));
  if (opts.record) {
    report.c2s = rec.c2s;
    report.s2c = rec.s2c;
  }
  return report;
}

const only = opts.only ? new Set(opts.only.split(",")) : null;
const selected = scenarios.filter(([name]) => !only || only.has(name));
if (only && selected.length !== only.size) throw new Error(`--only names unknown scenarios: ${opts.only}`);

const results = [];
for (const s of selected) results.push(await run(s));
const ok = results.every((r) => r.ok);
process.stdout.write(JSON.stringify({ url: opts.url, ok, scenarios: results }, null, 1) + "\n");
process.exit(ok ? 0 : 1);
