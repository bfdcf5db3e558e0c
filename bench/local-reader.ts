/**
 * The local reader's weights against a baseline set of weights, photo by photo: each validation photo is read by
 * both, in alternating order, in one process, so the shared machine's load falls on both alike.
 *   node bench/local-reader.ts --baseline DIR [--models DIR] [--photos N]
 * DIR: a models/ folder, e.g. an earlier commit's: mkdir /tmp/old && git archive COMMIT models | tar -x -C /tmp/old
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { SHARED_DATASETS, loadLabelledPhotos, validationSplit } from '../src/eval/dataset.ts';
import { percentile } from '../src/eval/metrics.ts';
import { normaliseImage } from '../src/images.ts';
import { loadMeterModel, type MeterModel } from '../src/readers/local/model.ts';

const REPO_ROOT = path.resolve(import.meta.dirname, '..');
const WARM_UP = 5;

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    models: { type: 'string', default: path.join(REPO_ROOT, 'models') },
    photos: { type: 'string', default: '100' },
  },
});
const photoCount = Number(values.photos);
if (!values.baseline || !Number.isInteger(photoCount) || photoCount < 1) {
  console.error('usage: node bench/local-reader.ts --baseline DIR [--models DIR] [--photos N]');
  process.exit(2);
}
if (!existsSync(SHARED_DATASETS)) {
  console.log(`skipped: no datasets at ${SHARED_DATASETS}`);
  process.exit(0);
}

const config = loadConfig();
const [baseline, candidate] = await Promise.all(
  [values.baseline, values.models].map((dir) => loadMeterModel(path.resolve(dir), config.localReaderThreads)),
);

/** What a model read (or why not) at what confidence, and how long it took. */
async function timedRead(
  model: MeterModel,
  image: Buffer,
): Promise<{ ms: number; reading: string; confidence: number }> {
  const started = performance.now();
  const answer = await model.read(image).then(
    ({ reading, confidence }) => ({ reading, confidence }),
    // The message's calibrated confidences (the guess's and the floor's) are not part of the reading.
    (error: Error) => ({
      reading: `no reading (${error.message.replace(/(confidence|about) \d+/g, '$1')})`,
      confidence: 0,
    }),
  );
  return { ms: performance.now() - started, ...answer };
}

console.log(
  `baseline ${path.resolve(values.baseline)}, this run ${path.resolve(values.models)}; ${config.localReaderThreads} threads each`,
);
console.log(
  'dataset    photos   baseline p50 / p95   this run p50 / p95   ratio p50 / p95   readings differ   confidences differ (most)',
);
for (const { name, dir, only } of await validationSplit()) {
  const photos = (await loadLabelledPhotos(dir, only)).slice(0, photoCount + WARM_UP);
  const times: [number[], number[]] = [[], []];
  let readingsDiffer = 0;
  const confidenceChanges: number[] = [];
  for (const [index, photo] of photos.entries()) {
    const { jpeg } = await normaliseImage(await readFile(path.join(dir, photo.file)), {
      maxPixels: config.maxImagePixels,
      longSide: config.normalisedLongSide,
    });
    const candidateFirst = index % 2 === 1;
    const first = await timedRead(candidateFirst ? candidate : baseline, jpeg);
    const second = await timedRead(candidateFirst ? baseline : candidate, jpeg);
    const [before, after] = candidateFirst ? [second, first] : [first, second];
    if (index < WARM_UP) continue;
    times[0].push(before.ms);
    times[1].push(after.ms);
    if (before.reading !== after.reading) readingsDiffer++;
    else if (before.confidence !== after.confidence)
      confidenceChanges.push(Math.abs(before.confidence - after.confidence));
  }
  const [base, now] = times.map((list) => list.sort((a, b) => a - b));
  const cell = (list: number[]) =>
    `${percentile(list, 50).toFixed(0)} / ${percentile(list, 95).toFixed(0)} ms`.padEnd(21);
  const ratio = (p: number) => (percentile(now!, p) / percentile(base!, p)).toFixed(2);
  console.log(
    `${name.padEnd(10)} ${String(now!.length).padStart(6)}   ${cell(base!)}${cell(now!)}${`${ratio(50)} / ${ratio(95)}`.padEnd(18)}${String(readingsDiffer).padEnd(18)}${confidenceChanges.length} (${Math.max(0, ...confidenceChanges)})`,
  );
}
