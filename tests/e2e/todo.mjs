// End-to-end scenario of the to-do gadget against a real `atelier serve`, driven by the official
// npm capnweb client (installed in tests/capnweb/node, see scripts/setup.sh). Run by
// e2e_test.go in two phases around a server restart:
//
//   node todo.mjs setup URL TODO STATE.json        sign up, create a workspace, deploy the gadget
//                                                  (TODO: a component, or a JS gadget's folder),
//                                                  two clients subscribe, both see every change;
//                                                  writes what the check phase needs to STATE.json
//   node todo.mjs check URL STATE.json             log in again, the items are still there, and
//                                                  a subscriber still gets new events
//
// Every step prints one line; a failure throws with a message that names the step.
import { createRequire } from "node:module";
import { readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deepStrictEqual, equal, ok, rejects } from "node:assert/strict";

// Reuse the pinned capnweb and ws packages of the interop tests instead of a second install.
const require = createRequire(new URL("../capnweb/node/package.json", import.meta.url));
globalThis.WebSocket ??= require("ws").WebSocket; // Node 20 has no global WebSocket; capnweb needs one
const { newWebSocketRpcSession } = require("capnweb");

const GRANTS = ["atelier:host/kv", "atelier:host/log", "atelier:host/events"];
// A JS gadget runs on the server's engine, which imports bindings too.
const JS_GRANTS = [...GRANTS, "atelier:host/bindings"];
const EVENT_TIMEOUT_MS = 10000;

const [phase, url, ...rest] = process.argv.slice(2);
if (!["setup", "check"].includes(phase) || !url) {
  throw new Error("usage: node todo.mjs setup URL TODO.wasm|DIR STATE.json | check URL STATE.json");
}

const step = (msg) => console.log(`e2e: ${msg}`);

/** A Cap'n Web session of its own, like a second browser tab. */
function session() {
  const root = newWebSocketRpcSession(url);
  return { root, close: () => root[Symbol.dispose]() };
}

/** Collects the events a subscription delivers and waits for a number of them. */
class Inbox {
  constructor(name) {
    this.name = name;
    this.events = [];
    this.waiters = [];
    this.callback = (ev) => {
      this.events.push(ev);
      this.waiters = this.waiters.filter((w) => !w());
    };
  }
  /** Resolves with the events once there are n, or rejects after EVENT_TIMEOUT_MS. */
  waitFor(n) {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.events.length < n) return false;
        clearTimeout(timer);
        resolve(this.events.slice(0, n));
        return true;
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check);
        reject(new Error(`${this.name}: got ${this.events.length} events within ${EVENT_TIMEOUT_MS} ms, ` +
          `want ${n}: ${JSON.stringify(this.events)}`));
      }, EVENT_TIMEOUT_MS);
      if (!check()) this.waiters.push(check);
    });
  }
}

/** The event the gadget publishes for a change. */
const change = (kind, id, title, done) => ({ topic: "todos", payload: { kind, todo: { id, title, done } } });

/** The gadget's code as createGadget takes it: component bytes, or a JS gadget's {file: source}. */
function readCode(path) {
  if (!statSync(path).isDirectory()) return { code: new Uint8Array(readFileSync(path)), grants: GRANTS };
  const code = {};
  for (const f of readdirSync(path)) if (/\.(js|ts)$/.test(f)) code[f] = readFileSync(join(path, f), "utf8");
  return { code, grants: JS_GRANTS };
}

async function setup(codePath, statePath) {
  const { code, grants } = readCode(codePath);
  const username = `e2e${Date.now().toString(36)}`;
  const password = "correct horse battery staple";

  const owner = session();
  const token = await owner.root.signup(username, password);
  ok(typeof token === "string" && token.startsWith("atl_"), `signup returned ${token}, want an atl_ token`);
  const api = owner.root.authenticate(token);
  deepStrictEqual((await api.whoami()).username, username, "whoami after signup");
  const ws = api.createWorkspace("e2e");
  const workspace = await ws.info();
  ok(workspace.id, `workspace info ${JSON.stringify(workspace)} has no id`);
  step(`signed up ${username}, created workspace ${workspace.id}`);

  const gadget = ws.createGadget("todo", code, grants);
  const info = await gadget.info();
  equal(info.name, "todo");
  equal(info.current, 1, `a new gadget's current version: ${JSON.stringify(info)}`);
  step(`deployed todo version ${info.current} from ${codePath}`);

  // Two more clients of the same user, each on its own WebSocket, subscribe to the gadget.
  const clients = [];
  for (const name of ["client A", "client B"]) {
    const s = session();
    const t = await s.root.login(username, password);
    const g = s.root.authenticate(t).openWorkspace(workspace.id).gadget("todo");
    const inbox = new Inbox(name);
    const subscription = await g.subscribe(inbox.callback);
    clients.push({ ...s, app: g.connect(), inbox, subscription });
  }
  step("two clients subscribed");

  const [a, b] = clients;
  deepStrictEqual(await a.app.add("buy milk"), { id: 1, title: "buy milk", done: false }, "add from A");
  deepStrictEqual(await a.app.add("walk the dog"), { id: 2, title: "walk the dog", done: false }, "add from A");
  deepStrictEqual(await b.app.toggle(1), { id: 1, title: "buy milk", done: true }, "toggle from B");
  // An async function: assert.rejects must get a real Promise, not a capnweb RpcPromise.
  await rejects(async () => await a.app.toggle(99), (e) => {
    equal(e.code, "GADGET_ERROR", `toggle(99) rejected with ${e}, code ${e.code}; want code GADGET_ERROR`);
    ok(e.message.includes("no todo with id 99"), `toggle(99) message ${JSON.stringify(e.message)}`);
    return true;
  });
  const want = [
    change("added", 1, "buy milk", false),
    change("added", 2, "walk the dog", false),
    change("toggled", 1, "buy milk", true),
  ];
  for (const c of clients) deepStrictEqual(await c.inbox.waitFor(want.length), want, `${c.inbox.name}'s events`);
  step("both clients saw the three changes through their callbacks");

  // A cancelled subscription gets nothing more; the other one still does.
  await b.subscription.cancel();
  await a.app.remove(2);
  deepStrictEqual((await a.inbox.waitFor(4))[3], change("removed", 2, "walk the dog", false), "client A's fourth event");
  await new Promise((r) => setTimeout(r, 200));
  equal(b.inbox.events.length, 3, `client B got events after cancel(): ${JSON.stringify(b.inbox.events)}`);
  step("cancel() stopped client B's subscription");

  const items = await b.app.list();
  deepStrictEqual(items, [{ id: 1, title: "buy milk", done: true }], "list after the changes");
  writeFileSync(statePath, JSON.stringify({ username, password, workspace: workspace.id, items }));
  for (const c of [owner, ...clients]) c.close();
  step("setup done");
}

async function check(statePath) {
  const { username, password, workspace, items } = JSON.parse(readFileSync(statePath, "utf8"));
  const s = session();
  const token = await s.root.login(username, password);
  const g = s.root.authenticate(token).openWorkspace(workspace).gadget("todo");
  const app = g.connect();
  deepStrictEqual(await app.list(), items, "items after the restart");
  step(`the ${items.length} item(s) survived the restart`);

  const inbox = new Inbox("client after restart");
  await g.subscribe(inbox.callback);
  deepStrictEqual(await app.add("after restart"), { id: 3, title: "after restart", done: false }, "add after the restart");
  deepStrictEqual(await inbox.waitFor(1), [change("added", 3, "after restart", false)], "event after the restart");
  s.close();
  step("check done");
}

if (phase === "setup") await setup(rest[0], rest[1]);
else await check(rest[0]);
