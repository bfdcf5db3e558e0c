/**
 * Toloka's boxes are axis-aligned. Around a tilted counter such a box is nearly square and mostly background,
 * so train_localiser.py cannot learn the window from it. For each such training box this finds the tilted
 * window inside it that the strip readers read as the label says: of the rectangles inscribed in the box with
 * their long side at every FIT_ANGLE_STEP degrees, the one read right with the highest confidence. A box with
 * no such rectangle stays unfitted.
 *
 *   node ml/fit_tilted_boxes.ts [--models DIR] > "$METERLENS_CACHE/toloka-quads.csv"
 *
 * DIR: the set whose strip readers read the windows (default models/noncommercial, the set the Toloka recipe trains;
 * ml/train.sh passes the folder it writes).
 *
 * CSV: file, then the window's corners clockwise from its top-left as the counter reads (x y, 8 numbers), in the
 * photo's pixels.
 * The strip readers learn from the labelled boxes only (train_reader.py), so they can check these windows.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { NONCOMMERCIAL_MODEL_DIR } from '../src/config.ts';
import { windowCorners, windowsInscribedIn, type Window } from '../src/readers/local/geometry.ts';
import { decodePhoto, loadSessions, orientWindow, readWindow } from '../src/readers/local/model.ts';
import { LOOSE_BOX_ASPECT, READER_FILES } from '../src/readers/local/spec.ts';

const REPO_ROOT = path.resolve(import.meta.dirname, '..');
const TOLOKA = path.join(process.env.METERLENS_DATASETS ?? path.join(REPO_ROOT, '..', 'shared', 'datasets'), 'toloka');
const FIT_ANGLE_STEP = 3;

const { values } = parseArgs({ options: { models: { type: 'string', default: NONCOMMERCIAL_MODEL_DIR } } });
const stripReaders = await loadSessions(values.models, READER_FILES, 1);
const validation = new Set(
  (await readFile(path.join(REPO_ROOT, 'ml', 'splits', 'toloka-val.txt'), 'utf8')).split('\n'),
);
const labels = (await readFile(path.join(TOLOKA, 'labels.csv'), 'utf8')).trim().split('\n').slice(1);
console.log('file,corners');
for (const line of labels) {
  const [file, label, ...box] = line.split(',');
  const [x1, y1, x2, y2] = box.map(Number) as [number, number, number, number];
  const [width, height] = [x2 - x1, y2 - y1];
  if (validation.has(file!) || Math.max(width, height) >= LOOSE_BOX_ASPECT * Math.min(width, height)) continue;
  const { photo, toNormalised } = await decodePhoto(await readFile(path.join(TOLOKA, file!)));
  let best: { window: Window; confidence: number } | undefined;
  const inPhoto = {
    left: x1 / toNormalised,
    top: y1 / toNormalised,
    width: width / toNormalised,
    height: height / toNormalised,
  };
  for (const window of windowsInscribedIn(inPhoto, LOOSE_BOX_ASPECT, FIT_ANGLE_STEP)) {
    // The window as it was read: turned round when the readers found it upside down, and whole (a localiser learns
    // the counter's window, not the span of its wheels).
    const { formatted, window: read } = await readWindow(
      { stripReaders },
      photo,
      await orientWindow(stripReaders, photo, window),
    );
    if (formatted && formatted.value === Number(label) && formatted.confidence > (best?.confidence ?? -1)) {
      best = { window: read, confidence: formatted.confidence };
    }
  }
  if (!best) continue;
  const corners = windowCorners(best.window).map(([x, y]) => [x * toNormalised, y * toNormalised]);
  console.log(
    `${file},${corners
      .flat()
      .map((value) => value.toFixed(1))
      .join(' ')}`,
  );
}
