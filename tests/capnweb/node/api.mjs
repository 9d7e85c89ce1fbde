// The conformance API: the main object served by server.mjs and, with identical behaviour, by the
// Go conformance server (tests/capnweb/conformance). It is the API the golden transcripts
// (capnweb/testdata/transcripts.txt, part A) were recorded against.
import { RpcTarget } from "capnweb";

const userNames = ["", "alice", "bob", "carol"];

/** A counter object handed out by reference; it lives until the client releases it. */
export class Counter extends RpcTarget {
  #n;
  constructor(n) { super(); this.#n = n; }
  increment(by = 1) { this.#n += by; return this.#n; }
  get value() { return this.#n; }
}

/** The main object of one session (one WebSocket, or one HTTP batch). */
export class Api extends RpcTarget {
  #saved;
  hello(name) { return `Hello, ${name}!`; }
  add(a, b) { return a + b; }
  makeCounter(start) { return new Counter(start); }
  async callMeBack(cb, x) { return (await cb(x)) + 1; }
  async notifyTwice(listener) {
    const a = await listener.onEvent("first");
    const b = await listener.onEvent("second");
    return [a, b];
  }
  getUserIds() { return [1, 2, 3]; }
  getUserName(id) { return userNames[id]; }
  getUser(id) { return { id, name: userNames[id] }; }
  fail() { throw new RangeError("bad thing happened"); }
  echo(v) { return v; }
  get version() { return "1.0"; }
  getNothing() { return null; }
  getCounterBox(n) { return { label: "box", counter: new Counter(n) }; }
  async useCounter(c) { return await c.increment(100); }
  failWithCode() { const e = new Error("nope"); e.code = 42; throw e; }
  getTeams() { return [{ name: "red", memberIds: [1, 2] }, { name: "blue", memberIds: [3] }]; }
  subscribe(cb) { this.#saved = cb.dup(); return "subscribed"; }
  async fire(x) { return await this.#saved(x); }
  unsubscribe() { this.#saved[Symbol.dispose](); this.#saved = undefined; return "unsubscribed"; }
  getStream() {
    return new ReadableStream({ start(c) { c.enqueue("chunk-a"); c.enqueue("chunk-b"); c.close(); } });
  }
}
