// Notes as a JS gadget: markdown notes with tags and pins, kept in kv, searchable, and
// published on every change so that every open UI follows along. Run by the host's embedded
// QuickJS (no build step); client.js in this folder is its browser UI.
//
//   atelier gadget deploy notes gadgets/notes-js/ \
//     --grant atelier:host/kv,atelier:host/log,atelier:host/events,atelier:host/bindings
//
// kv: "next-id" holds the next id, "note/<id, 10 digits>" one note as JSON.
// Events: topic "notes", payload {kind: "created" | "updated" | "removed", note} (a removed
// note as it was).
import { byDisplayOrder, checkFields, checkId, checkTag, key, MAX_NOTES, PREFIX, type Note, type NoteFields } from "./note.js";

const NEXT_ID = "next-id";
const COUNT = "count";
const MAX_RESULTS = 200;

export class Gadget {
  declare storage: {
    get(key: string): unknown;
    put(key: string | Record<string, unknown>, value?: unknown): void;
    delete(key: string | string[]): void;
    list(options: { prefix?: string; limit?: number }): Map<string, unknown>;
  };
  declare events: { publish(topic: string, value: unknown): void };

  /** Returns every note, pinned first, then the most recently updated. */
  list(): Note[] {
    return this._all().sort(byDisplayOrder);
  }

  /** Returns one note; throws when there is none with that id. */
  get(id: number): Note {
    return this._note("get", id);
  }

  /** Creates a note from {title, body?, tags?, pinned?} and returns it. */
  create(fields: NoteFields): Note {
    const f = checkFields("create", fields, ["title"]);
    const count = (this.storage.get(COUNT) as number | undefined) ?? 0;
    if (count >= MAX_NOTES) throw new Error(`create: the notebook is full (${MAX_NOTES} notes); remove some first`);
    const id = (this.storage.get(NEXT_ID) as number | undefined) ?? 1;
    const now = new Date().toISOString();
    const note: Note = { id, title: f.title!, body: f.body ?? "", tags: f.tags ?? [], pinned: f.pinned ?? false, created: now, updated: now };
    this.storage.put({ [NEXT_ID]: id + 1, [COUNT]: count + 1, [key(id)]: note });
    this._changed("created", note);
    return note;
  }

  /** Changes the given fields of a note ({title?, body?, tags?, pinned?}) and returns it. */
  update(id: number, fields: NoteFields): Note {
    const note = this._note("update", id);
    const f = checkFields("update", fields, []);
    Object.assign(note, f, { updated: new Date().toISOString() });
    this.storage.put(key(note.id), note);
    this._changed("updated", note);
    return note;
  }

  /** Removes a note; returns whether it existed. */
  remove(id: number): boolean {
    checkId("remove", id);
    const note = this.storage.get(key(id)) as Note | undefined;
    if (note === undefined) return false;
    this.storage.delete(key(id));
    this.storage.put(COUNT, Math.max(0, ((this.storage.get(COUNT) as number | undefined) ?? 1) - 1));
    this._changed("removed", note);
    return true;
  }

  /**
   * Finds notes: "#tag" (or {tag}) those with the tag, other text (or {text}) those whose title,
   * body or tags contain it, ignoring case; both in one object must both match. At most 200,
   * in display order.
   */
  search(query: string | { tag?: string; text?: string }): Note[] {
    let tag: string | undefined;
    let text: string | undefined;
    if (typeof query === "string") {
      if (query.trim().startsWith("#")) tag = checkTag("search", query);
      else text = query;
    } else if (query !== null && typeof query === "object" && !Array.isArray(query)) {
      for (const k of Object.keys(query)) {
        if (k !== "tag" && k !== "text") throw new TypeError(`search: unknown field "${k}" (fields: tag, text)`);
      }
      if (query.tag !== undefined) tag = checkTag("search", query.tag);
      if (query.text !== undefined) {
        if (typeof query.text !== "string") throw new TypeError("search: text must be a string");
        text = query.text;
      }
    } else {
      throw new TypeError(`search: want "#tag", some text or {tag, text}, got ${JSON.stringify(query)}`);
    }
    const needle = text?.trim().toLowerCase();
    if (tag === undefined && !needle) throw new TypeError("search: the query is empty");
    return this._all()
      .filter((n) => tag === undefined || n.tags.includes(tag))
      .filter((n) => !needle || [n.title, n.body, ...n.tags].some((s) => s.toLowerCase().includes(needle)))
      .sort(byDisplayOrder)
      .slice(0, MAX_RESULTS);
  }

  /** Returns every tag in use with its number of notes, most used first. */
  tags(): { tag: string; count: number }[] {
    const counts = new Map<string, number>();
    for (const n of this._all()) for (const t of n.tags) counts.set(t, (counts.get(t) ?? 0) + 1);
    return [...counts].map(([tag, count]) => ({ tag, count })).sort((a, b) => b.count - a.count || (a.tag < b.tag ? -1 : 1));
  }

  _all(): Note[] {
    return [...this.storage.list({ prefix: PREFIX, limit: MAX_NOTES }).values()] as Note[];
  }

  _note(where: string, id: unknown): Note {
    const note = this.storage.get(key(checkId(where, id))) as Note | undefined;
    if (note === undefined) throw new Error(`${where}: no note with id ${id}`);
    return note;
  }

  _changed(kind: string, note: Note) {
    this.events.publish("notes", { kind, note });
    console.log(`${kind} note ${note.id}: ${note.title}`);
  }
}
