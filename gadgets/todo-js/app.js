// The todo-js gadget (wit/todo.wit). State in kv: "next-id" holds the next id (decimal text),
// "todo/<id, 10 digits>" holds one item as JSON. Changes are published on the topic "todos".
// Build: sdk/build-gadget.sh gadgets/todo-js OUT.wasm
import log from 'atelier:host/log@0.1.0';
import kv from 'atelier:host/kv@0.1.0';
import events from 'atelier:host/events@0.1.0';

const NEXT_ID = 'next-id';
const PREFIX = 'todo/';
const MAX_ITEMS = 10000;

// UTF-8 through the standard URI functions: this QuickJS runtime has no TextEncoder.
const encode = (s) => Uint8Array.from(unescape(encodeURIComponent(s)), (c) => c.charCodeAt(0));
const decode = (b) => decodeURIComponent(escape(String.fromCharCode(...b)));

const key = (id) => PREFIX + String(id).padStart(10, '0');

function load(id) {
  const value = kv.get(key(id));
  return value === null ? null : JSON.parse(decode(value));
}

function changed(kind, todo) {
  events.publish('todos', JSON.stringify({ kind, todo }));
  log.write('info', `${kind} ${todo.id}: ${todo.title}`);
}

export function add(title) {
  const next = kv.get(NEXT_ID);
  const id = next === null ? 1 : Number(decode(next));
  const todo = { id, title, done: false };
  kv.batch([
    { tag: 'set', val: { key: NEXT_ID, value: encode(String(id + 1)) } },
    { tag: 'set', val: { key: key(id), value: encode(JSON.stringify(todo)) } },
  ]);
  changed('added', todo);
  return todo;
}

export function list() {
  return kv.list(PREFIX, MAX_ITEMS).map((e) => JSON.parse(decode(e.value)));
}

export function toggle(id) {
  const todo = load(id);
  if (todo === null) throw `no todo with id ${id}`;
  todo.done = !todo.done;
  kv.set(key(id), encode(JSON.stringify(todo)));
  changed('toggled', todo);
  return todo;
}

export function remove(id) {
  const todo = load(id);
  if (todo === null) return false;
  kv.delete(key(id));
  changed('removed', todo);
  return true;
}

export function noop() {}

export function echo(s) {
  return s;
}

export function roundtrip(r) {
  return r;
}
