// Records the wire traffic of the official capnweb client from the client's side: every text
// frame it sends and receives on a WebSocket, and every HTTP batch request/response body split
// into messages. Import after websocket-global.mjs; it wraps the global WebSocket and fetch that
// capnweb looks up when it opens a session.

/** Traffic of one session, in the order the client saw it. */
export class Recording {
  /** Messages sent by the client (C->S), one JSON text per entry. */
  c2s = [];
  /** Messages received by the client (S->C), one JSON text per entry. */
  s2c = [];
  /** performance.now() of the last message in either direction. */
  lastActivity = performance.now();

  add(direction, text) {
    this[direction].push(text);
    this.lastActivity = performance.now();
  }

  /** Resolves once no message has moved for `quietMs`, or after `maxMs` at the latest. */
  async quiet(quietMs, maxMs) {
    const deadline = performance.now() + maxMs;
    for (;;) {
      const now = performance.now();
      const idle = now - this.lastActivity;
      if (idle >= quietMs || now >= deadline) return;
      await new Promise((r) => setTimeout(r, Math.min(quietMs - idle, deadline - now) + 1));
    }
  }
}

let current = null;

/** Makes `rec` the recording that sessions opened from now on write to. */
export function recordInto(rec) {
  current = rec;
}

const BaseWebSocket = globalThis.WebSocket;
globalThis.WebSocket = class RecordingWebSocket extends BaseWebSocket {
  #rec = current;
  constructor(...args) {
    super(...args);
    // Registered before capnweb's own listener, so it records before the client processes.
    this.addEventListener("message", (event) => this.#rec?.add("s2c", String(event.data)));
  }
  send(data, ...rest) {
    this.#rec?.add("c2s", String(data));
    return super.send(data, ...rest);
  }
};

const baseFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const rec = current;
  const split = (body) => (body === "" ? [] : body.split("\n"));
  if (rec && typeof init?.body === "string") for (const m of split(init.body)) rec.add("c2s", m);
  const response = await baseFetch(input, init);
  if (rec && response.ok) for (const m of split(await response.clone().text())) rec.add("s2c", m);
  return response;
};
