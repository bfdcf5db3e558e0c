/**
 * Reads the wheels of the Toloka photos a list names, in the windows localiser 1 found (find_windows.ts's CSV), with
 * each wheel reader given, as the service reads them (three shifts averaged); prints each one's share of wheels right
 * by position, of windows with the whole units right and with all eight right, and its commonest misreads.
 *
 *   node ml/measure_wheels.ts splits/toloka-calibration.txt calibrating/wheels.onnx OTHER.onnx
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { rectifyInto, sliceWindow, type Window } from '../src/readers/local/geometry.ts';
import { decodePhoto } from '../src/readers/local/model.ts';
import { WHEEL_COUNT, WHEEL_HEIGHT, WHEEL_MARGIN, WHEEL_SHIFTS, WHEEL_WIDTH } from '../src/readers/local/spec.ts';

const TOLOKA = path.join(
  process.env.METERLENS_DATASETS ?? path.join(import.meta.dirname, '..', '..', 'shared', 'datasets'),
  'toloka',
);
const CACHE = process.env.METERLENS_CACHE ?? '/tmp/ml-cache';
const [listFile, ...models] = process.argv.slice(2);
const wanted = new Set(
  (await readFile(listFile!, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => l.split(',')[0]!.trim()),
);
const labels = new Map(
  (await readFile(`${TOLOKA}/labels.csv`, 'utf8'))
    .trim()
    .split('\n')
    .slice(1)
    .map((l) => {
      const [file, reading] = l.split(',');
      return [file!, reading!] as const;
    }),
);
const digitsOf = (reading: string) => {
  const [whole, frac = ''] = reading.split('.');
  return (whole!.padStart(5, '0') + frac.padEnd(3, '0')).split('').map(Number);
};
const windows = new Map<string, Window>();
for (const line of (await readFile(path.join(CACHE, 'toloka-windows.csv'), 'utf8')).trim().split('\n').slice(1)) {
  const [file, localiser, corners] = line.split(',');
  if (localiser !== '1' || !wanted.has(file!)) continue;
  const v = corners!.split(' ').map(Number);
  const [tl, tr, , bl] = [0, 1, 2, 3].map((i) => [v[2 * i]!, v[2 * i + 1]!]);
  const len = Math.hypot(tr![0]! - tl![0]!, tr![1]! - tl![1]!);
  const centre: [number, number] = [(v[0]! + v[2]! + v[4]! + v[6]!) / 4, (v[1]! + v[3]! + v[5]! + v[7]!) / 4];
  windows.set(file!, {
    centre,
    across: [(tr![0]! - tl![0]!) / len, (tr![1]! - tl![1]!) / len],
    halfWidth: len / 2,
    halfHeight: Math.hypot(bl![0]! - tl![0]!, bl![1]! - tl![1]!) / 2,
  });
}
const sessions = await Promise.all(models.map((m) => ort.InferenceSession.create(m)));
const size = 3 * WHEEL_HEIGHT * WHEEL_WIDTH;
const right = sessions.map(() => ({ wheel: Array(WHEEL_COUNT).fill(0), whole: 0, all: 0 }));
const confusions = sessions.map(() => new Map<string, number>());
let n = 0;
for (const [file, window] of windows) {
  const { photo } = await decodePhoto(await readFile(`${TOLOKA}/${file}`));
  const slices = WHEEL_SHIFTS.flatMap((s) =>
    Array.from({ length: WHEEL_COUNT }, (_, w) => sliceWindow(window, w + s, WHEEL_COUNT)),
  );
  const crops = new Float32Array(slices.length * size);
  slices.forEach((slice, i) =>
    rectifyInto(photo, slice, WHEEL_MARGIN, WHEEL_MARGIN, WHEEL_WIDTH, WHEEL_HEIGHT, crops, i * size),
  );
  const truth = digitsOf(labels.get(file)!);
  n += 1;
  for (const [k, session] of sessions.entries()) {
    const out = await session.run({
      wheels: new ort.Tensor('float32', crops, [slices.length, 3, WHEEL_HEIGHT, WHEEL_WIDTH]),
    });
    const p = out.probabilities!.data as Float32Array;
    const read = Array.from({ length: WHEEL_COUNT }, (_, w) => {
      const sum = Array(10).fill(0);
      for (let s = 0; s < WHEEL_SHIFTS.length; s++)
        for (let d = 0; d < 10; d++) sum[d] += p[(s * WHEEL_COUNT + w) * 10 + d]!;
      return sum.indexOf(Math.max(...sum));
    });
    const ok = read.map((d, w) => d === truth[w]);
    ok.forEach((o, w) => (right[k]!.wheel[w] += o ? 1 : 0));
    read.forEach((d, w) => {
      if (d !== truth[w]) {
        const key = `${truth[w]}->${d}`;
        confusions[k]!.set(key, (confusions[k]!.get(key) ?? 0) + 1);
      }
    });
    if (ok.slice(0, 5).every(Boolean)) right[k]!.whole += 1;
    if (ok.every(Boolean)) right[k]!.all += 1;
  }
}
console.log(`${n} windows (of ${wanted.size} photos)`);
for (const [k, r] of right.entries()) {
  console.log(
    [...confusions[k]!]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([key, c]) => `${key} ${c}`)
      .join(', '),
  );
  console.log(
    `${models[k]}: per wheel ${r.wheel.map((c) => (c / n).toFixed(3)).join(' ')}; whole units ${(r.whole / n).toFixed(3)}; all ${(r.all / n).toFixed(3)}`,
  );
}
