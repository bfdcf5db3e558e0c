/**
 * Writes where each localiser of a set finds the counter window of each Toloka photo, cut to its wheels as the
 * service cuts it, so train_wheels.py cuts its training wheels from windows like those the service reads.
 * Of a localiser's candidates the one whose centre is nearest the labelled box's, read left to right as the box
 * reads; a window the strip readers would turn round is left out (the service would not read it that way).
 *
 *   node ml/find_windows.ts [--models DIR] > "$METERLENS_CACHE/toloka-windows.csv"
 *
 * DIR: the set whose localisers and strip readers find the windows (default models/noncommercial, the set the
 * Toloka recipe trains; ml/train.sh passes the folder it writes).
 *
 * CSV: file, the localiser (1 or 2, as in LOCALISER_FILES), then the window's corners clockwise from its top-left
 * (x y, 8 numbers), in the photo's pixels.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { NONCOMMERCIAL_MODEL_DIR } from '../src/config.ts';
import { turnWindow, windowAroundWheels, windowCorners, type Window } from '../src/readers/local/geometry.ts';
import { decodePhoto, loadSessions, localise, orientWindow } from '../src/readers/local/model.ts';
import { LOCALISER_FILES, READER_FILES } from '../src/readers/local/spec.ts';

const REPO_ROOT = path.resolve(import.meta.dirname, '..');
const TOLOKA = path.join(process.env.METERLENS_DATASETS ?? path.join(REPO_ROOT, '..', 'shared', 'datasets'), 'toloka');

const { values } = parseArgs({ options: { models: { type: 'string', default: NONCOMMERCIAL_MODEL_DIR } } });
const localisers = await loadSessions(values.models, LOCALISER_FILES, 1);
const stripReaders = await loadSessions(values.models, READER_FILES, 1);
const labels = (await readFile(path.join(TOLOKA, 'labels.csv'), 'utf8')).trim().split('\n').slice(1);
console.log('file,localiser,corners');
for (const line of labels) {
  const [file, , ...box] = line.split(',');
  const [x1, y1, x2, y2] = box.map(Number) as [number, number, number, number];
  const { photo } = await decodePhoto(await readFile(path.join(TOLOKA, file!)));
  const distance = (window: Window) => Math.hypot(window.centre[0] - (x1 + x2) / 2, window.centre[1] - (y1 + y2) / 2);
  for (const [index, localiser] of localisers.entries()) {
    const nearest = (await localise(localiser, photo)).sort((a, b) => distance(a) - distance(b))[0];
    if (!nearest) continue;
    const leftToRight = nearest.across[0] >= 0 ? nearest : turnWindow(nearest);
    const { window, wheelCentres } = await orientWindow(stripReaders, photo, leftToRight);
    if (window.across[0] !== leftToRight.across[0]) continue;
    const corners = windowCorners(windowAroundWheels(window, wheelCentres));
    console.log(
      `${file},${index + 1},${corners
        .flat()
        .map((value) => value.toFixed(1))
        .join(' ')}`,
    );
  }
}
