// Load generator: the official capnweb client calling add(1, 2) over WebSocket sessions against a
// server that serves the conformance API (api.mjs).
//
// Usage: node bench.mjs --url http://HOST:PORT [--mode seq|pipelined] [--sessions N]
//                       [--duration SECONDS] [--depth CALLS] [--warmup SECONDS]
//   seq        every session awaits one call at a time
//   pipelined  every session keeps --depth calls (default 100) in flight: it issues them all,
//              awaits them all, and repeats
//
// Prints one JSON line: {mode, sessions, depth, duration_s, calls, calls_per_s, p50_ms, p99_ms}.
// Latency is measured per call, from issue to resolution. Any failed call aborts the run with
// exit status 1 and an {error} line.
import "./websocket-global.mjs";
import { newWebSocketRpcSession } from "capnweb";
import { parseArgs, endpoints } from "./args.mjs";

const opts = parseArgs({ url: "", mode: "seq", sessions: 1, duration: 5, depth: 100, warmup: 0.5 });
if (!opts.url) throw new Error("--url http://HOST:PORT is required");
if (opts.mode !== "seq" && opts.mode !== "pipelined") throw new Error(`unknown --mode ${opts.mode}`);
const depth = opts.mode === "seq" ? 1 : opts.depth;
const wsUrl = endpoints(opts.url).ws;

async function call(api, latencies) {
  const t0 = performance.now();
  const v = await api.add(1, 2);
  if (v !== 3) throw new Error(`add(1, 2) returned ${JSON.stringify(v)}`);
  latencies?.push(performance.now() - t0);
}

/** Runs rounds of `depth` concurrent calls on one session until `deadline`. */
async function drive(api, deadline, latencies) {
  while (performance.now() < deadline) {
    const round = [];
    for (let i = 0; i < depth; i++) round.push(call(api, latencies));
    await Promise.all(round);
  }
}

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const sessions = Array.from({ length: opts.sessions }, () => newWebSocketRpcSession(wsUrl));
try {
  // Connect every session, then warm up (JIT, buffers) without recording.
  await Promise.all(sessions.map((api) => call(api, null)));
  const warmEnd = performance.now() + opts.warmup * 1000;
  await Promise.all(sessions.map((api) => drive(api, warmEnd, null)));

  const latencies = [];
  const start = performance.now();
  const deadline = start + opts.duration * 1000;
  await Promise.all(sessions.map((api) => drive(api, deadline, latencies)));
  const elapsed = (performance.now() - start) / 1000;

  latencies.sort((a, b) => a - b);
  const round3 = (x) => (x === null ? null : Math.round(x * 1000) / 1000);
  process.stdout.write(JSON.stringify({
    mode: opts.mode,
    sessions: opts.sessions,
    depth,
    duration_s: round3(elapsed),
    calls: latencies.length,
    calls_per_s: Math.round(latencies.length / elapsed),
    p50_ms: round3(percentile(latencies, 50)),
    p99_ms: round3(percentile(latencies, 99)),
  }) + "\n");
} catch (err) {
  process.stdout.write(JSON.stringify({ error: String(err?.stack ?? err) }) + "\n");
  process.exitCode = 1;
} finally {
  for (const api of sessions) api[Symbol.dispose]();
}
