// Test guest: Math.random in a componentize-qjs component, whose engine is a snapshot taken at
// build time. The top level draws once, so that the snapshot holds a generator already used.
const first = Math.random();

/** The value the top level drew. */
export function atInit() {
  return first;
}

/** Draws n values. */
export function draw(n) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(Math.random());
  return out;
}
