// The to-do list as a JS gadget: a class whose public methods are the RPC surface, run by the
// host's embedded QuickJS (no build step; deploy this folder). Same API and kv layout as
// gadgets/todo-js: "next-id" holds the next id, "todo/<id, 10 digits>" one item as JSON, and
// every change is published on the topic "todos" as {kind, todo}.
//
//   atelier gadget deploy todo gadgets/todo-jsgadget/ \
//     --grant atelier:host/kv,atelier:host/log,atelier:host/events,atelier:host/bindings
import { key, PREFIX, type Todo } from "./todo.js";

const NEXT_ID = "next-id";
const MAX_ITEMS = 10000;

export class Gadget {
  declare storage: {
    get(key: string): unknown;
    put(key: string | Record<string, unknown>, value?: unknown): void;
    delete(key: string | string[]): void;
    list(options: { prefix?: string; limit?: number }): Map<string, unknown>;
  };
  declare events: { publish(topic: string, value: unknown): void };

  /** Adds an open item and returns it. */
  add(title: string): Todo {
    if (typeof title !== "string") throw new TypeError("add(title): title must be a string");
    const id = (this.storage.get(NEXT_ID) as number | undefined) ?? 1;
    const todo: Todo = { id, title, done: false };
    this.storage.put({ [NEXT_ID]: id + 1, [key(id)]: todo });
    this._changed("added", todo);
    return todo;
  }

  /** Returns all items in the order they were added. */
  list(): Todo[] {
    return [...this.storage.list({ prefix: PREFIX, limit: MAX_ITEMS }).values()] as Todo[];
  }

  /** Flips an item's `done`; throws when no item has that id. */
  toggle(id: number): Todo {
    const todo = this.storage.get(key(id)) as Todo | undefined;
    if (todo === undefined) throw new Error(`no todo with id ${id}`);
    todo.done = !todo.done;
    this.storage.put(key(id), todo);
    this._changed("toggled", todo);
    return todo;
  }

  /** Removes an item; returns whether it existed. */
  remove(id: number): boolean {
    const todo = this.storage.get(key(id)) as Todo | undefined;
    if (todo === undefined) return false;
    this.storage.delete(key(id));
    this._changed("removed", todo);
    return true;
  }

  /** Does nothing (measures the bare call cost). */
  noop(): void {}

  /** Returns `s` unchanged. */
  echo(s: string): string {
    return s;
  }

  _changed(kind: string, todo: Todo) {
    this.events.publish("todos", { kind, todo });
    console.log(`${kind} ${todo.id}: ${todo.title}`);
  }
}
