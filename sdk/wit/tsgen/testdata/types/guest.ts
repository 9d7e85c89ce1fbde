// A component of world `runner` (types.wit), type-checked against the declarations
// tsgen.Modules writes and run by TestModulesAtRunTime: it calls every import the way the
// declarations say and checks that the values come back in the declared shapes.
import shapes, { Pen, Canvas, open, type Point, type Shape, type Style } from 'test:types/shapes@0.1.0';
import values, { bytes, containers, nested, scalars, delete as del, type Labels } from 'test:types/values@0.1.0';

const failures: string[] = [];

function show(v: unknown): string {
  return JSON.stringify(v, (_k, x) => (x instanceof Uint8Array ? { Uint8Array: Array.from(x) } : x));
}

function check(what: string, got: unknown, want: unknown): void {
  if (show(got) !== show(want)) failures.push(`${what}: got ${show(got)}, want ${show(want)}`);
}

// fails calls f, which must throw an Error, and returns it.
function fails(what: string, f: () => unknown): Error | undefined {
  try {
    f();
    failures.push(`${what}: did not throw`);
  } catch (e) {
    if (e instanceof Error) return e;
    failures.push(`${what}: threw ${show(e)}, not an Error`);
  }
  return undefined;
}

export function run(): string {
  const p: Point = { xPos: 1, yPos: -2 };
  const st: Style = { bold: true, dashedLine: false };

  const pen = new Pen(3);
  check('pen.width', pen.width(), 3);
  pen.draw({ tag: 'path', val: [p] }, 'light-blue', st);
  check('draw error message', fails('draw none', () => pen.draw({ tag: 'none' }, 'red', st))?.message, 'nothing to draw');
  const preset: Pen = Pen.preset('fine');
  check('preset', preset.width(), 4);
  const err = fails('preset ""', () => shapes.Pen.preset('')) as (Error & { payload?: Shape }) | undefined;
  check('preset error payload', err?.payload, { tag: 'circle', val: 1.5 });
  check('open ""', open(''), null);
  const canvas = shapes.open('main');
  if (canvas === null) {
    failures.push('open main: null');
  } else {
    check('import', canvas.import(canvas) instanceof Canvas, true);
  }
  const back: Pen = shapes.handBack(pen, preset);
  check('hand-back', [back instanceof Pen, back.width()], [true, 4]);

  scalars(true, -1, 1, -2, 2, -3, 3, -4, 4, 0.5, 1.5, 'c', 'str');
  check('bytes', bytes([1, 2, 3]), new Uint8Array([1, 2, 3]));
  check('bytes of a Uint8Array', bytes(new Uint8Array([4])) instanceof Uint8Array, true);
  const [labels, maybe]: [Labels, { tag: 'some'; val: number | null } | { tag: 'none' }] = containers([p, { xPos: 0, yPos: 0 }], [7, 'seven']);
  check('labels', labels, ['2 points', 'seven']);
  check('option<option<u32>>', maybe, { tag: 'some', val: null });
  check('nested', nested({ tag: 'err', val: 'no' }, { tag: 'ok' }, p), [{ tag: 'ok' }, { tag: 'err', val: 9 }]);
  check('nested none', nested({ tag: 'ok', val: 1 }, { tag: 'err' }, null), []);
  check('delete', del('x'), true);
  check('default.delete', values.delete('y'), false);
  fails('delete ""', () => del(''));
  return failures.length === 0 ? 'ok' : failures.join('\n');
}
