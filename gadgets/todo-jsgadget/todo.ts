// The kv layout shared with gadgets/todo-js and gadgets/todo-go.

/** One item of the list. */
export interface Todo {
  id: number;
  title: string;
  done: boolean;
}

/** The prefix of the items' keys. */
export const PREFIX = "todo/";

/** The key of item id: the prefix and the id in 10 digits, so that keys sort by id. */
export const key = (id: number): string => PREFIX + String(id).padStart(10, "0");
