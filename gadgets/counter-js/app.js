// The counter-js gadget (wit/counter.wit): the count is kept in the gadget's kv state under the
// key "count" as 8 little-endian bytes, exactly like counter-go, so the two are interchangeable
// on one gadget's state. componentize-qjs passes a u64 as a JavaScript number, so the count is
// exact up to 2^53 (Number.MAX_SAFE_INTEGER); counter-go wraps at 2^64 instead.
// Build: sdk/build-gadget.sh gadgets/counter-js OUT.wasm
import log from 'atelier:host/log@0.1.0';
import kv from 'atelier:host/kv@0.1.0';

const COUNT = 'count';
const TWO_32 = 2 ** 32;

function load() {
  const v = kv.get(COUNT);
  if (v === null || v.length !== 8) return 0;
  const view = new DataView(Uint8Array.from(v).buffer);
  return view.getUint32(4, true) * TWO_32 + view.getUint32(0, true);
}

function store(n) {
  const v = new Uint8Array(8);
  const view = new DataView(v.buffer);
  view.setUint32(0, n % TWO_32, true);
  view.setUint32(4, Math.floor(n / TWO_32), true);
  kv.set(COUNT, v);
}

export function increment(by) {
  const n = load() + by;
  store(n);
  log.write('info', `increment by ${by} -> ${n}`);
  return n;
}

export function get() {
  return load();
}

export function reset() {
  kv.delete(COUNT);
  log.write('info', 'reset');
}

export function noop() {}

export function echo(s) {
  return s;
}

export function roundtrip(r) {
  return r;
}
