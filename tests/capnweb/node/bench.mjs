// Load generator: the official capnweb client calling add(1, 2) over WebSocket sessions against a
// server that serves the conformance API (api.mjs).
//
// Usage: node bench.mjs --url http://HOST:PORT [--mode seq|pipelined] [--sessions N]
//                       [--duration SECONDS] [--depth CALLS] [--warmup SECONDS]
//                       [--sync] [--histogram]
//   seq        every session awaits one call at a time
//   pipelined  every session keeps --depth calls (default 100) in flight: it issues them all,
//              awaits them all, and repeats
//   --sync     once every session is connected, print {"ready":true} and read the start of the
//              measured window (Date.now() milliseconds) from a line on stdin, instead of
//              starting it --warmup seconds later; this lets several client processes measure
//              the same window. Sessions keep calling (warming up) while they wait.
//   --histogram adds latency_us: [[microseconds, calls], ...] so that runs can be merged
//
// Prints one JSON line: {mode, sessions, depth, duration_s, calls, calls_per_s, p50_ms, p99_ms,
// cpu_s, late_ms}: cpu_s is the CPU time this client process used during the window, late_ms
// how much later than asked the window started (a start time already past when it was read
// starts the window at once). Only calls that complete inside the measured window count;
// latency is measured per call, from issue to resolution. Any failed call aborts the run with
// exit status 1 and an {error} line.
import "./websocket-global.mjs";
import { createInterface } from "node:readline";
import { newWebSocketRpcSession } from "capnweb";
import { parseArgs, endpoints } from "./args.mjs";

const opts = parseArgs({
  url: "", mode: "seq", sessions: 1, duration: 5, depth: 100, warmup: 0.5, sync: false, histogram: false,
});
if (!opts.url) throw new Error("--url http://HOST:PORT is required");
if (opts.mode !== "seq" && opts.mode !== "pipelined") throw new Error(`unknown --mode ${opts.mode}`);
const depth = opts.mode === "seq" ? 1 : opts.depth;
const wsUrl = endpoints(opts.url).ws;

/** Records the latency of calls that complete inside [start, end] (performance.now() times). */
class Window {
  constructor() { this.start = Infinity; this.end = Infinity; this.latencies = []; }
  record(t0, t1) {
    if (t1 >= this.start && t1 <= this.end) this.latencies.push(t1 - t0);
  }
}

async function call(api, win) {
  const t0 = performance.now();
  const v = await api.add(1, 2);
  if (v !== 3) throw new Error(`add(1, 2) returned ${JSON.stringify(v)}`);
  win?.record(t0, performance.now());
}

/** Runs rounds of `depth` concurrent calls on one session until the window ends. */
async function drive(api, win) {
  while (performance.now() < win.end) {
    const round = [];
    for (let i = 0; i < depth; i++) round.push(call(api, win));
    await Promise.all(round);
  }
}

/** Reads one line from stdin, then stops reading it. */
async function firstLine() {
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    lines.close();
    process.stdin.destroy();
    return line;
  }
  throw new Error("stdin ended before the start time");
}

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Counts latencies per whole microsecond: [[us, calls], ...] in increasing order. */
function histogram(sorted) {
  const out = [];
  for (const ms of sorted) {
    const us = Math.round(ms * 1000);
    if (out.length > 0 && out[out.length - 1][0] === us) out[out.length - 1][1]++;
    else out.push([us, 1]);
  }
  return out;
}

const sessions = Array.from({ length: opts.sessions }, () => newWebSocketRpcSession(wsUrl));
try {
  // Connect every session (one call each), then call until the window ends; the calls before
  // the window are the warm-up (JIT, buffers).
  await Promise.all(sessions.map((api) => call(api, null)));
  const win = new Window();
  const driving = Promise.all(sessions.map((api) => drive(api, win)));
  driving.catch(() => {}); // awaited below; this only keeps an early failure from being unhandled
  let startWall = Date.now() + opts.warmup * 1000;
  if (opts.sync) {
    process.stdout.write(JSON.stringify({ ready: true }) + "\n");
    startWall = Number(await firstLine());
  }
  const now = performance.now();
  win.start = now + (startWall - Date.now());
  if (Number.isNaN(win.start)) throw new Error(`bad start time ${startWall}`);
  const late = Math.max(0, now - win.start); // this busy process read the start time late
  win.start = Math.max(win.start, now);
  win.end = win.start + opts.duration * 1000;
  // This process's CPU time over the window (the timers fire a little late on a busy loop).
  let cpuStart = null, cpuSeconds = 0;
  setTimeout(() => { cpuStart = process.cpuUsage(); }, win.start - now);
  const cpuDone = new Promise((resolve) => setTimeout(() => {
    const d = process.cpuUsage(cpuStart ?? undefined);
    cpuSeconds = (d.user + d.system) / 1e6;
    resolve();
  }, win.end - now));
  await Promise.all([driving, cpuDone]);

  const latencies = win.latencies.sort((a, b) => a - b);
  const round3 = (x) => (x === null ? null : Math.round(x * 1000) / 1000);
  const report = {
    mode: opts.mode,
    sessions: opts.sessions,
    depth,
    duration_s: opts.duration,
    calls: latencies.length,
    calls_per_s: Math.round(latencies.length / opts.duration),
    p50_ms: round3(percentile(latencies, 50)),
    p99_ms: round3(percentile(latencies, 99)),
    cpu_s: round3(cpuSeconds),
    late_ms: round3(late),
  };
  if (opts.histogram) report.latency_us = histogram(latencies);
  process.stdout.write(JSON.stringify(report) + "\n");
} catch (err) {
  process.stdout.write(JSON.stringify({ error: String(err?.stack ?? err) }) + "\n");
  process.exitCode = 1;
} finally {
  for (const api of sessions) api[Symbol.dispose]();
}
