// Turns files picked in a file input into the `code` argument of createGadget/deploy: a
// component's bytes (.wasm), a JS gadget's gzip'd tar as bytes (.tar.gz/.tgz), or a JS gadget's
// files as {name: source} (.js/.ts files).

/** The grants every host capability has; a JS gadget needs the first four. */
export const GRANTS = ["atelier:host/kv", "atelier:host/log", "atelier:host/events", "atelier:host/bindings", "atelier:host/clock"];

/**
 * Reads the picked files. Returns {code, kind: "component"|"js", client}: client is the
 * source of a client.js picked next to a component (sent with it, so that one version holds
 * both), else null (a JS gadget's client.js is one of its files).
 */
export async function readGadgetFiles(files) {
  files = [...files];
  if (files.length === 0) throw new Error("pick a .wasm component, a .tar.gz of JS files, or .js/.ts files");
  const wasm = files.filter((f) => f.name.endsWith(".wasm"));
  const tars = files.filter((f) => /\.(tar\.gz|tgz)$/.test(f.name));
  const sources = files.filter((f) => /\.(js|ts)$/.test(f.name));
  if (wasm.length + tars.length > 1) throw new Error("pick one .wasm or .tar.gz file");
  if (wasm.length === 1) {
    const other = sources.filter((f) => f.name !== "client.js");
    if (other.length > 0 || tars.length > 0) throw new Error(`a component goes alone (or with client.js), not with ${other.map((f) => f.name).join(", ")}`);
    const client = sources.find((f) => f.name === "client.js");
    return { kind: "component", code: new Uint8Array(await wasm[0].arrayBuffer()), client: client ? await client.text() : null };
  }
  if (tars.length === 1) {
    if (sources.length > 0) throw new Error("pick a .tar.gz or the files, not both");
    return { kind: "js", code: new Uint8Array(await tars[0].arrayBuffer()), client: null };
  }
  const unknown = files.filter((f) => !sources.includes(f));
  if (unknown.length > 0) throw new Error(`cannot deploy ${unknown.map((f) => f.name).join(", ")}: not .wasm, .tar.gz, .js or .ts`);
  const code = {};
  for (const f of sources) code[f.name] = await f.text();
  return { kind: "js", code, client: null };
}

/** The grants a kind of gadget starts with in the forms. */
export function defaultGrants(kind) {
  return kind === "js" ? GRANTS.slice(0, 4) : GRANTS.slice(0, 3);
}

/** Reads the one file picked in a file input as bytes; what names it in the error ("a blueprint archive"). */
export async function readOneFile(input, what) {
  const file = input.files && input.files[0];
  if (!file) throw new Error(`pick ${what} first`);
  return new Uint8Array(await file.arrayBuffer());
}

/** Offers bytes to the person as a downloaded file named filename. */
export function downloadBytes(bytes, filename, type = "application/octet-stream") {
  const url = URL.createObjectURL(new Blob([bytes], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}
