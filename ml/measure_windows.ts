/**
 * How well localisers' windows fit the labelled counters of a split, before any reader runs: of each photo's
 * first-look windows (`localise`, as the service looks first) the one whose centre is nearest the label's, and its
 * height and width over the label's, and its axis against the label's. A mask that spreads past the counter's top and
 * bottom shows as a long tail of heights (ml/EXPERIMENTS.md, "clean windows cut shorter"). bdci2020 labels each
 * counter's quad; Toloka only an upright box, which is taller than a tilted counter's window: on Toloka compare
 * localisers with each other (the shipped ones beside), not with 1.
 *
 *   node ml/measure_windows.ts [--dataset toloka|bdci2020] [--split calibration|val] LOCALISER.onnx...
 *
 * One line a localiser: the photos with a window on the counter (its centre within a quarter of the label's width
 * of the label's), that window's height and width over the label's at the quartiles and the 90th percentile, and how
 * many of those windows are tilted more than 8° from the label's axis. With several localisers, a last line: the
 * photos on whose counter none of them put a window, which no reader after them can read.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { SHARED_DATASETS, VALIDATION_SETS, loadFileList } from '../src/eval/dataset.ts';
import { percentile } from '../src/eval/metrics.ts';
import { scaleWindow, type Point, type Window } from '../src/readers/local/geometry.ts';
import { decodePhoto, loadSessions, localise } from '../src/readers/local/model.ts';

const OFF_AXIS_DEGREES = 8;
const PERCENTILES = [25, 50, 75, 90];
/** The ml/splits lists: `val`, which no network learns; `calibration`, which ml/calibrating's networks do not. */
const SPLITS = ['calibration', 'val'];

/** A labelled counter's centre, extents along and across it, and the unit vector along it. */
interface Label {
  centre: Point;
  width: number;
  height: number;
  along: Point;
}

const { values, positionals } = parseArgs({
  options: { dataset: { type: 'string', default: 'toloka' }, split: { type: 'string', default: 'calibration' } },
  allowPositionals: true,
});
if (!VALIDATION_SETS.includes(values.dataset) || !SPLITS.includes(values.split) || positionals.length === 0) {
  console.error(
    'usage: node ml/measure_windows.ts [--dataset toloka|bdci2020] [--split calibration|val] LOCALISER.onnx...',
  );
  process.exit(2);
}
const datasetDir = path.join(SHARED_DATASETS, values.dataset);
const only = await loadFileList(path.join(import.meta.dirname, 'splits', `${values.dataset}-${values.split}.txt`));
const labels = (await readLabels(datasetDir)).filter(([file]) => only.has(file));
let missedByAll = new Set(labels.map(([photoFile]) => photoFile));
for (const file of positionals) {
  const [localiser] = await loadSessions(path.dirname(file), [path.basename(file)], 1);
  const heights: number[] = [];
  const widths: number[] = [];
  let offAxis = 0;
  const missed = new Set<string>();
  for (const [photoFile, label] of labels) {
    const { photo, toNormalised } = await decodePhoto(await readFile(path.join(datasetDir, photoFile)));
    const window = nearest(
      label,
      (await localise(localiser!, photo)).map((found) => scaleWindow(found, toNormalised)),
    );
    if (!window) {
      missed.add(photoFile);
      continue;
    }
    heights.push((2 * window.halfHeight) / label.height);
    widths.push((2 * window.halfWidth) / label.width);
    const cosine = Math.abs(window.across[0] * label.along[0] + window.across[1] * label.along[1]);
    if (cosine < Math.cos((OFF_AXIS_DEGREES * Math.PI) / 180)) offAxis++;
  }
  console.log(
    `${file}: on the counter ${heights.length} of ${labels.length}; height over the label's ${quantiles(heights)}; ` +
      `width ${quantiles(widths)}; more than ${OFF_AXIS_DEGREES}° off its axis ${offAxis}`,
  );
  missedByAll = new Set([...missedByAll].filter((photoFile) => missed.has(photoFile)));
}
if (positionals.length > 1) console.log(`no window on the counter from any of them: ${missedByAll.size}`);

/** labels.csv's rows with the counter's place: Toloka's x1,y1,x2,y2 box, or bdci2020's quad (clockwise from top-left). */
async function readLabels(dir: string): Promise<Array<[string, Label]>> {
  const [header, ...rows] = (await readFile(path.join(dir, 'labels.csv'), 'utf8')).trim().split(/\r?\n/);
  const columns = header!.split(',');
  const at = (row: string[], name: string) => Number(row[columns.indexOf(name)]);
  return rows.map((line) => {
    const row = line.split(',');
    if (columns.includes('quad')) {
      const values = row[columns.indexOf('quad')]!.split(' ').map(Number);
      return [row[0]!, fromCorners([0, 1, 2, 3].map((i) => [values[2 * i]!, values[2 * i + 1]!] as Point))];
    }
    const [x1, y1, x2, y2] = ['x1', 'y1', 'x2', 'y2'].map((name) => at(row, name)) as [number, number, number, number];
    return [
      row[0]!,
      fromCorners([
        [x1, y1],
        [x2, y1],
        [x2, y2],
        [x1, y2],
      ]),
    ];
  });
}

function fromCorners([topLeft, topRight, bottomRight, bottomLeft]: Point[]): Label {
  const distance = (a: Point, b: Point) => Math.hypot(b[0] - a[0], b[1] - a[1]);
  const width = (distance(topLeft!, topRight!) + distance(bottomLeft!, bottomRight!)) / 2;
  const height = (distance(topLeft!, bottomLeft!) + distance(topRight!, bottomRight!)) / 2;
  const top = distance(topLeft!, topRight!);
  return {
    centre: [(topLeft![0] + bottomRight![0]) / 2, (topLeft![1] + bottomRight![1]) / 2],
    width,
    height,
    along: [(topRight![0] - topLeft![0]) / top, (topRight![1] - topLeft![1]) / top],
  };
}

function nearest(label: Label, windows: Window[]): Window | undefined {
  const distance = (window: Window) =>
    Math.hypot(window.centre[0] - label.centre[0], window.centre[1] - label.centre[1]);
  const [closest] = [...windows].sort((a, b) => distance(a) - distance(b));
  return closest && distance(closest) <= label.width / 4 ? closest : undefined;
}

function quantiles(values: number[]): string {
  if (values.length === 0) return '-';
  const sorted = [...values].sort((a, b) => a - b);
  return PERCENTILES.map((p) => percentile(sorted, p).toFixed(2)).join(' / ');
}
