// Uses every declaration tsgen.Modules writes for types.wit; `tsc --strict` must accept it,
// and each line marked @ts-expect-error must be refused (so the declarations are not `any`).
import shapes, { Pen, Canvas, open, type Point, type Shape, type Color, type Colour, type Style, type Names } from 'test:types/shapes@0.1.0';
import values, { type Labels, bytes, containers, nested, scalars, delete as del } from 'test:types/values@0.1.0';
import { maps, asyncThings, uses, aliased, slow, Pen as SamePen } from 'test:types/later@0.1.0';
import * as valuesNS from 'test:types/values@0.1.0';

const p: Point = { xPos: 1, yPos: -2 };
const shapesList: Shape[] = [{ tag: 'none' }, { tag: 'circle', val: 2.5 }, { tag: 'path', val: [p] }];
const c: Colour = 'light-blue';
const c2: Color = c;
const st: Style = { bold: true, dashedLine: false };
const names: Names = ['a'];

const pen = new Pen(3);
const width: number = pen.width();
for (const s of shapesList) pen.draw(s, c2, st);
const preset: Pen = Pen.preset('fine');
const same: Pen = shapes.Pen.preset('x');
const canvas: Canvas | null = open('main');
if (canvas !== null) {
  const copy: Canvas = canvas.import(canvas);
  shapes.open(String(copy));
}

scalars(true, -1, 1, -2, 2, -3, 3, -4, 4, 0.5, 1.5, 'c', 'str');
const b: Uint8Array = bytes([1, 2]);
bytes(b);
const [labels, maybe]: [Labels, { tag: 'some'; val: number | null } | { tag: 'none' }] = containers([p], [1, 'one']);
const m: Map<string, number> = maps(new Map([['k', 1]]), [1, 2, 3]);
const more: string[] = labels;
if (maybe.tag === 'some' && maybe.val !== null) scalars(false, 0, 0, 0, 0, 0, 0, 0, 0, 0, maybe.val, 'x', more.join());
const results: Array<{ tag: 'ok' } | { tag: 'err'; val: number }> = nested({ tag: 'ok', val: 1 }, { tag: 'err' }, null);
nested({ tag: 'err', val: 'no' }, { tag: 'ok' }, p);
const kept: SamePen = uses(pen, shapes.handBack(pen, preset));
const gone: boolean = del('x') && values.delete('y') && valuesNS.delete('z');
asyncThings(null, undefined);
const fromAlias: number = aliased(new Uint8Array([1]));
const later: Promise<number> = slow();
values.scalars(true, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'c', String(results.length + width + Number(gone)));

// @ts-expect-error: records have camelCase keys
const wrongKey: Point = { 'x-pos': 1, yPos: 2 };
// @ts-expect-error: not a case of the enum
const wrongColor: Color = 'lightBlue';
// @ts-expect-error: a flag is missing
const wrongStyle: Style = { bold: true };
// @ts-expect-error: canvas has no constructor
new Canvas();
// @ts-expect-error: the payload of circle is a number
pen.draw({ tag: 'circle', val: 'big' }, 'red', st);
// @ts-expect-error: list<u8> results are Uint8Arrays
const wrongBytes: number[] = bytes([1]);
// @ts-expect-error: option<option<T>> is tagged, not null
containers([], [1, 'x']) satisfies [Labels, null];
// @ts-expect-error: the world does not import it
import('test:types/other@0.1.0');

export { wrongKey, wrongColor, wrongStyle, wrongBytes, kept, same, m, fromAlias, later };
