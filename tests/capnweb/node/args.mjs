// Minimal command-line parsing shared by the scripts: `--name value` pairs and bare `--flag`s.

/**
 * Parses process.argv into an object. `spec` maps each accepted option name to its default
 * value; a boolean default makes the option a flag that takes no value. Unknown options and
 * missing values throw.
 */
export function parseArgs(spec, argv = process.argv.slice(2)) {
  const out = { ...spec };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const name = arg.startsWith("--") ? arg.slice(2) : null;
    if (name === null || !(name in spec)) throw new Error(`unknown argument ${JSON.stringify(arg)}`);
    if (typeof spec[name] === "boolean") { out[name] = true; continue; }
    if (i + 1 >= argv.length) throw new Error(`--${name} needs a value`);
    const value = argv[++i];
    out[name] = typeof spec[name] === "number" ? Number(value) : value;
    if (Number.isNaN(out[name])) throw new Error(`--${name}: not a number: ${JSON.stringify(value)}`);
  }
  return out;
}

/** Derives the WebSocket (`/ws`) and HTTP batch (`/batch`) endpoints from a server base URL. */
export function endpoints(baseUrl) {
  const base = new URL(baseUrl);
  const ws = new URL("/ws", base);
  ws.protocol = base.protocol === "https:" ? "wss:" : "ws:";
  return { ws: ws.href, batch: new URL("/batch", base).href };
}
