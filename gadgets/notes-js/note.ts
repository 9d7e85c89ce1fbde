// A note, its kv layout and the checks of what clients send.

/** One note. `body` is markdown text; `created` and `updated` are RFC 3339 times. */
export interface Note {
  id: number;
  title: string;
  body: string;
  tags: string[];
  pinned: boolean;
  created: string;
  updated: string;
}

/** The fields a client may set: all for create (only title required), any for update. */
export interface NoteFields {
  title?: string;
  body?: string;
  tags?: string[];
  pinned?: boolean;
}

/** The prefix of the notes' keys. */
export const PREFIX = "note/";

/** The key of note id: the prefix and the id in 10 digits, so that keys sort by id. */
export const key = (id: number): string => PREFIX + String(id).padStart(10, "0");

export const MAX_TITLE = 200;
export const MAX_BODY = 100_000;
export const MAX_TAGS = 20;
export const MAX_NOTES = 5000;
const TAG = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const FIELDS = ["title", "body", "tags", "pinned"];

/** Checks a note id. */
export function checkId(where: string, id: unknown): number {
  if (typeof id !== "number" || !Number.isInteger(id) || id < 1) {
    throw new TypeError(`${where}: id must be a positive integer, got ${JSON.stringify(id)}`);
  }
  return id;
}

/** Normalizes a tag: trimmed, lower case, 1-32 of a-z 0-9 - _ starting with a letter or digit. */
export function checkTag(where: string, tag: unknown): string {
  const t = typeof tag === "string" ? tag.trim().toLowerCase().replace(/^#/, "") : "";
  if (!TAG.test(t)) {
    throw new TypeError(`${where}: tag ${JSON.stringify(tag)} must be 1-32 of a-z 0-9 - _ (starting with a letter or digit)`);
  }
  return t;
}

/**
 * Checks the fields a client sent and returns them normalized: a trimmed title, the tags
 * lower-cased without duplicates. `required` lists the fields that must be present.
 */
export function checkFields(where: string, fields: unknown, required: string[]): NoteFields {
  if (fields === null || typeof fields !== "object" || Array.isArray(fields)) {
    throw new TypeError(`${where}: want an object {title, body, tags, pinned}, got ${JSON.stringify(fields)}`);
  }
  const f = fields as Record<string, unknown>;
  for (const k of Object.keys(f)) {
    if (!FIELDS.includes(k)) throw new TypeError(`${where}: unknown field "${k}" (fields: ${FIELDS.join(", ")})`);
  }
  for (const k of required) {
    if (f[k] === undefined) throw new TypeError(`${where}: ${k} is required`);
  }
  const out: NoteFields = {};
  if (f.title !== undefined) {
    const title = typeof f.title === "string" ? f.title.trim() : "";
    if (title === "" || title.length > MAX_TITLE) {
      throw new TypeError(`${where}: title must be a non-empty string of at most ${MAX_TITLE} characters`);
    }
    out.title = title;
  }
  if (f.body !== undefined) {
    if (typeof f.body !== "string" || f.body.length > MAX_BODY) {
      throw new TypeError(`${where}: body must be a string of at most ${MAX_BODY} characters`);
    }
    out.body = f.body;
  }
  if (f.tags !== undefined) {
    if (!Array.isArray(f.tags) || f.tags.length > MAX_TAGS) {
      throw new TypeError(`${where}: tags must be an array of at most ${MAX_TAGS} tags`);
    }
    out.tags = [...new Set(f.tags.map((t) => checkTag(where, t)))];
  }
  if (f.pinned !== undefined) {
    if (typeof f.pinned !== "boolean") throw new TypeError(`${where}: pinned must be true or false`);
    out.pinned = f.pinned;
  }
  return out;
}

/** Orders notes for display: pinned first, then the most recently updated, then by id. */
export function byDisplayOrder(a: Note, b: Note): number {
  if (a.pinned !== b.pinned) return a.pinned ? -1 : 1;
  if (a.updated !== b.updated) return a.updated < b.updated ? 1 : -1;
  return b.id - a.id;
}
