/** Smoke test on a few real validation photos; skipped where ../shared/datasets is absent (e.g. a fresh clone). */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { NONCOMMERCIAL_MODEL_DIR, loadConfig } from '../../src/config.ts';
import { loadFileList, loadLabelledPhotos } from '../../src/eval/dataset.ts';
import { isExact } from '../../src/eval/metrics.ts';
import { normaliseImage } from '../../src/images.ts';
import type { ConfidenceEvidence } from '../../src/readers/local/confidence.ts';
import { createLocalReader } from '../../src/readers/local.ts';
import { ReaderError, type MeterReader } from '../../src/readers/reader.ts';

const REPO_ROOT = path.resolve(import.meta.dirname, '..', '..');
const DATASETS = path.resolve(REPO_ROOT, '..', 'shared', 'datasets');
const PHOTOS_PER_DATASET = 4;
const LAYOUT: Record<string, RegExp> = { toloka: /^\d{5}\.\d{3}$/, bdci2020: /^\d{5}$/ };

const NO_DATASETS = !existsSync(DATASETS) && `no datasets at ${DATASETS}`;

/** The non-commercial set, whose readings of these photos the tests below pin (the default set's: its last test). */
async function noncommercialReader(): Promise<MeterReader> {
  const reader = await createLocalReader(loadConfig({ LOCAL_MODEL_DIR: NONCOMMERCIAL_MODEL_DIR }));
  if (!reader) throw new Error(`no local model weights in ${NONCOMMERCIAL_MODEL_DIR} (they ship with the repository)`);
  return reader;
}

/** A Toloka photo as the service reads an upload of it: normalised as `config` normalises photos. */
async function uploadedTolokaPhoto(file: string, config = loadConfig({})): Promise<Buffer> {
  const photo = readFileSync(path.join(DATASETS, 'toloka', 'images', file));
  const { jpeg } = await normaliseImage(photo, {
    maxPixels: config.maxImagePixels,
    longSide: config.normalisedLongSide,
  });
  return jpeg;
}

t.test('reads real validation photos', { skip: NO_DATASETS }, async (t) => {
  const reader = await noncommercialReader();
  let exact = 0,
    read = 0;
  for (const dataset of Object.keys(LAYOUT)) {
    const only = await loadFileList(path.join(REPO_ROOT, 'ml', 'splits', `${dataset}-val.txt`));
    const photos = (await loadLabelledPhotos(path.join(DATASETS, dataset), only)).slice(0, PHOTOS_PER_DATASET);
    for (const photo of photos) {
      const image = readFileSync(path.join(DATASETS, dataset, photo.file));
      try {
        const result = await reader.read(image, AbortSignal.timeout(30_000));
        read++;
        t.match(result.reading, LAYOUT[dataset]!, `${dataset}/${photo.file} in the dial's layout`);
        if (
          isExact({
            file: photo.file,
            accepted: photo.accepted,
            predicted: result.reading,
            confidence: result.confidence,
            latencyMs: 0,
          })
        )
          exact++;
      } catch (error) {
        t.ok(error instanceof ReaderError, `${dataset}/${photo.file}: only a ReaderError may be thrown`);
      }
    }
  }
  // A smoke test, not the accuracy bar (`npm run eval` measures that): most of these should read exactly.
  t.ok(exact >= read / 2, `${exact} of ${read} photos read exactly`);
});

t.test('a 5 + 3 counter whose window is found around its black wheels only', { skip: NO_DATASETS }, async (t) => {
  const reader = await noncommercialReader();
  // Both localisers find only the five black wheels of this counter (31.559); without reading past them it read `00031`
  // at 88.
  const result = await reader.read(
    readFileSync(path.join(DATASETS, 'toloka', 'images', 'id_645_value_31_559.jpg')),
    AbortSignal.timeout(30_000),
  );
  t.match(result.reading, LAYOUT.toloka!, 'read with its fractional wheels');
  t.match(result.raw, { otherLayout: { reading: '00031' } }, 'the five-wheel reading it competed with');
  t.equal(result.wholeUnitsAgreed, true, 'unsure of its red wheels, every reader read 31 whole units');
});

t.test('five wheels from inside a 5 + 3 counter, where a window cut across it', { skip: NO_DATASETS }, async (t) => {
  // The default set reads this counter (108.928) most surely in a window over five of its wheels (`08928` at 82), and
  // a 5 + 3 reading around them holds those five.
  const config = loadConfig({});
  const clean = (await createLocalReader(config))!;
  const jpeg = await uploadedTolokaPhoto('id_710_value_108_928.jpg', config);
  const result = await clean.read(jpeg, AbortSignal.timeout(30_000));
  t.equal(result.reading, '00108.928');
  t.match(result.raw, { otherLayout: { reading: '08928' } }, 'the five-wheel reading it competed with');
});

t.test(
  'counters tilted about 45 degrees, which the localisers miss in the photo as it is',
  { skip: NO_DATASETS },
  async (t) => {
    const reader = await noncommercialReader();
    // Before the turned look (lookTurned) these read `00212` at 17 and `26831` at 20.
    for (const [file, reading] of [
      ['id_1210_value_212_913.jpg', '00212.913'],
      ['id_466_value_122_487.jpg', '00122.487'],
    ]) {
      const result = await reader.read(
        readFileSync(path.join(DATASETS, 'toloka', 'images', file!)),
        AbortSignal.timeout(30_000),
      );
      t.equal(result.reading, reading, file);
    }
  },
);

t.test(
  'a 5 + 3 counter read as five wheels where most of its readings see 5 + 3 is no surer than their share',
  { skip: NO_DATASETS },
  async (t) => {
    const reader = await noncommercialReader();
    // 580.979, uploaded: v13 read `05809` at 91, where 6 of the photo's 17 readings were in five wheels.
    const jpeg = await uploadedTolokaPhoto('id_1053_value_580_979.jpg');
    const result = await reader.read(jpeg, AbortSignal.timeout(30_000));
    if (!LAYOUT.bdci2020!.test(result.reading))
      return void t.match(result.reading, LAYOUT.toloka!, 'read in its own layout');
    const { evidence } = result.raw as { evidence: ConfidenceEvidence };
    t.ok(evidence.layoutsAgreeing < 0.5, `${evidence.layoutsAgreeing} of its readings in five wheels`);
    t.ok(result.confidence < 80, `${result.reading} at ${result.confidence}`);
  },
);

t.test(
  "layout memory: a 5 + 3 meter's photo read as five wheels is read as 5 + 3 within the meter's layout",
  { skip: NO_DATASETS },
  async (t) => {
    // 423.037: the default set reads it freely and surely as `00677` at 98, five wheels that are not its counter's.
    const config = loadConfig({});
    const reader = (await createLocalReader(config))!;
    const jpeg = await uploadedTolokaPhoto('id_521_value_423_037.jpg', config);
    const free = await reader.read(jpeg, AbortSignal.timeout(30_000));
    t.match(free, { reading: LAYOUT.bdci2020! }, 'read freely as five wheels');
    t.ok(free.confidence >= 80, `and surely: at ${free.confidence}`);
    const layout = { whole: 5, fraction: 3, shownBy: '00403.037' };
    const known = await reader.read(jpeg, AbortSignal.timeout(30_000), undefined, layout);
    t.match(
      known,
      { plausibility: 'corrected', unconstrainedReading: free.reading },
      'the layout changed the reading, and says from what',
    );
    t.match(known.reading, /^00423\.\d{3}$/, `${known.reading}: the meter's wheels, its whole units right`);
    const window = { reference: '00403.037', min: 403.037, max: 403.037 + 2.5 * 30 * 24 };
    t.match(
      await reader.read(jpeg, AbortSignal.timeout(30_000), window, layout),
      { reading: known.reading, plausibility: 'corrected' },
      'within a window too',
    );
  },
);
