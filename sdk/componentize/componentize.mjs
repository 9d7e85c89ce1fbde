// Turns a guest into a component for a WIT world. Called by ../build-gadget.sh; see there.
//
//   node componentize.mjs go  CORE.wasm  WITDIR WORLD PROJECTWIT OUT.wasm
//   node componentize.mjs js  ENTRY.js   WITDIR WORLD PROJECTWIT OUT.wasm
//   node componentize.mjs wat FILE.wat   -      -     -          OUT.wasm
//
// WITDIR holds the guest's own WIT package; PROJECTWIT is the project's wit/ folder, one
// package per subfolder. The guest's package and every project package it references
// (transitively, e.g. atelier:gadget -> atelier:host) are joined into one WIT source with
// nested `package x { ... }` blocks, because jco's in-process wasm-tools cannot read files
// (its `witPath` traps with ENOENT) and takes the WIT as text only.
import { readFile, readdir, writeFile, mkdtemp, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { componentEmbed, componentNew, parse, preview1AdapterReactorPath } from '@bytecodealliance/jco';
import { componentize } from 'componentize-qjs';

const PACKAGE_DECL = /^[ \t]*package[ \t]+([a-z][a-z0-9-]*:[a-z][a-z0-9-]*)(@[^\s;]+)?[ \t]*;/m;
const REFERENCE = /\b([a-z][a-z0-9-]*:[a-z][a-z0-9-]*)\//g;

// Reads the .wit files of one package folder: its name and its items without the declaration.
async function readPackage(dir) {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.wit')).sort();
  if (files.length === 0) throw new Error(`no .wit files in ${dir}`);
  let name, version, body = '';
  for (const f of files) {
    const text = await readFile(join(dir, f), 'utf8');
    const m = text.match(PACKAGE_DECL);
    if (m) {
      if (name && name !== m[1]) throw new Error(`${dir}: files declare packages ${name} and ${m[1]}`);
      [name, version] = [m[1], m[2] ?? ''];
    }
    body += `// ${f}\n${m ? text.replace(PACKAGE_DECL, '') : text}\n`;
  }
  if (!name) throw new Error(`${dir}: no file declares a package`);
  return { name, version, body };
}

// Joins the guest's package with the project packages it references into one WIT source.
async function witSource(witDir, projectWit) {
  const own = await readPackage(witDir);
  const project = new Map();
  for (const d of await readdir(projectWit, { withFileTypes: true })) {
    if (!d.isDirectory() || d.name === 'deps') continue;
    const p = await readPackage(join(projectWit, d.name));
    project.set(p.name, p);
  }
  const included = new Set([own.name]);
  const queue = [own];
  let src = `package ${own.name}${own.version};\n${own.body}`;
  while (queue.length > 0) {
    for (const [, ref] of queue.shift().body.matchAll(REFERENCE)) {
      const p = project.get(ref);
      if (included.has(ref) || !p) continue; // unknown packages: left to the WIT resolver's error
      included.add(ref);
      queue.push(p);
      src += `\npackage ${p.name}${p.version} {\n${p.body}}\n`;
    }
  }
  return src;
}

async function buildGo(core, source, world) {
  const embedded = await componentEmbed({ binary: await readFile(core), witSource: source, world });
  const adapter = await readFile(preview1AdapterReactorPath());
  return componentNew(embedded, [['wasi_snapshot_preview1', adapter]]);
}

// RANDOM_PROLOGUE starts every JS guest's module: it replaces Math.random. componentize-qjs
// snapshots the engine after the module's top level ran (Wizer, at build time), and QuickJS
// seeds Math.random when the engine starts, so without it every instance of one build would
// return the same sequence (ids a gadget draws would repeat after each restart of its instance,
// and in every user's copy of a blueprint). The engine offers no entropy (no crypto), so the
// generator (sfc32) stirs the clock into its state whenever the clock moved since its last
// call: instances started at different microseconds diverge from their first call. Like any
// Math.random it is not for secrets. It is one line, so that the module's line numbers (in
// stack traces) stay those of its source.
const RANDOM_PROLOGUE = [
  'Math.random = (() => {',
  'let a = 0x9e3779b9, b = 0x243f6a88, c = 0xb7e15162, d = 1, last = NaN;',
  'const clock = typeof performance === "object" ? () => performance.now() : () => Date.now();',
  'const next = () => { a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0; let t = (a + b) | 0; a = b ^ (b >>> 9);',
  'b = (c + (c << 3)) | 0; c = (c << 21) | (c >>> 11); d = (d + 1) | 0; t = (t + d) | 0; c = (c + t) | 0; return t >>> 0; };',
  'return function random() { const now = clock();',
  'if (now !== last) { last = now; const us = Math.floor(now * 1000), ms = Date.now();',
  'a ^= us % 4294967296; b ^= Math.floor(us / 4294967296); c ^= ms % 4294967296; d ^= Math.floor(ms / 4294967296);',
  'for (let i = 0; i < 12; i++) next(); }',
  'return (next() * 2097152 + (next() >>> 11)) / 9007199254740992; }; })();',
].join(' ');

async function buildJS(entry, source, world) {
  // componentize-qjs reads WIT from a path only: write the joined source to a temporary file.
  const dir = await mkdtemp(join(tmpdir(), 'atelier-wit-'));
  try {
    const witPath = join(dir, 'world.wit');
    await writeFile(witPath, source);
    // The module root is the entry's folder, so that the paths embedded in the snapshot do not
    // depend on where the build was started.
    const { component } = await componentize({
      witPath, world, jsPath: entry, moduleRoot: dirname(entry), jsSource: RANDOM_PROLOGUE + (await readFile(entry, 'utf8')), sync: true,
    });
    return component;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function main() {
  const [lang, input, witDir, world, projectWit, out] = process.argv.slice(2);
  if (!out) throw new Error('usage: componentize.mjs go|js|wat INPUT WITDIR WORLD PROJECTWIT OUT');
  let component;
  if (lang === 'wat') {
    component = await parse(await readFile(input, 'utf8'));
  } else {
    const source = await witSource(witDir, projectWit);
    if (lang === 'go') component = await buildGo(input, source, world);
    else if (lang === 'js') component = await buildJS(input, source, world);
    else throw new Error(`unknown language ${lang}`);
  }
  await writeFile(out, component);
}

main().catch((err) => {
  console.error(`componentize: ${err?.message ?? err}`);
  process.exit(1);
});
