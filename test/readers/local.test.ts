import { existsSync } from 'node:fs';
import { mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import t from 'tap';
import { DEFAULT_MODEL_DIR, NONCOMMERCIAL_MODEL_DIR, loadConfig } from '../../src/config.ts';
import { ReaderChain } from '../../src/readers/chain.ts';
import { createLocalReader } from '../../src/readers/local.ts';
import {
  CALIBRATION_FILE,
  calibrate,
  parseCalibration,
  type ConfidenceEvidence,
} from '../../src/readers/local/confidence.ts';
import { MODEL_FILES } from '../../src/readers/local/model.ts';
import { PROVENANCE_FILE, type Provenance } from '../../src/readers/local/provenance.ts';
import { ROLLING_FILE } from '../../src/readers/local/rolling.ts';
import { LOCALISER_FILES, MODEL_NAME, READER_FILES, WHEEL_READER_FILE } from '../../src/readers/local/spec.ts';
import { IMPLAUSIBLE_CONFIDENCE_CAP } from '../../src/plausibility-policy.ts';
import { ReaderError, clampConfidence, type MeterReader } from '../../src/readers/reader.ts';
import { drawMeter } from '../fakes/meter-photo.ts';

/** The set whose files the tests of how weights load mix and match: the non-commercial one, which has a wheel reader. */
const MODEL_DIR = NONCOMMERCIAL_MODEL_DIR;
const weightsShipped = [DEFAULT_MODEL_DIR, MODEL_DIR].every((dir) =>
  MODEL_FILES.every((file) => existsSync(path.join(dir, file))),
);

const signal = () => AbortSignal.timeout(30_000);

/** A fresh model folder holding links to the non-commercial set's `files`. */
async function modelDirWith(files: string[]): Promise<string> {
  const folder = await mkdtemp(path.join(tmpdir(), 'meterlens-models-'));
  for (const file of files) await symlink(path.join(MODEL_DIR, file), path.join(folder, file));
  return folder;
}

t.test('no weights in LOCAL_MODEL_DIR: no local reader', async (t) => {
  const empty = await mkdtemp(path.join(tmpdir(), 'meterlens-nomodel-'));
  t.equal(await createLocalReader(loadConfig({ LOCAL_MODEL_DIR: empty })), undefined);
});

t.test(
  "weights without a wheel reader (an operator's own photos alone): the strip readers read alone",
  { skip: !weightsShipped && `no weights in ${MODEL_DIR}` },
  async (t) => {
    const withoutWheels = await modelDirWith(MODEL_FILES);
    t.notOk(existsSync(path.join(withoutWheels, WHEEL_READER_FILE)));
    const reader = (await createLocalReader(loadConfig({ LOCAL_MODEL_DIR: withoutWheels })))!;
    const result = await reader.read((await drawMeter('00758', '407')).image, signal());
    t.match(result.reading, /^\d{5}(\.\d{3})?$/);
    t.equal(result.value, Number(result.reading));
  },
);

t.test(
  'weights for another input size than spec.json names stop the model from loading, naming the file',
  { skip: !weightsShipped && `no weights in ${MODEL_DIR}` },
  async (t) => {
    const mismatched = await modelDirWith(MODEL_FILES);
    // A strip reader (32 x 160 inputs) where the wheel reader should be.
    await symlink(path.join(MODEL_DIR, MODEL_FILES.at(-1)!), path.join(mismatched, WHEEL_READER_FILE));
    await t.rejects(
      createLocalReader(loadConfig({ LOCAL_MODEL_DIR: mismatched })),
      new RegExp(
        `failed to load: ${WHEEL_READER_FILE.replace('.', '\\.')} reads 32 x 160 inputs; spec.json gives it \\d+ x \\d+`,
      ),
    );
  },
);

t.test(
  "a reading records its weights' set, as their provenance.json names it, as its model",
  { skip: !weightsShipped && `no weights in ${MODEL_DIR}` },
  async (t) => {
    const { image } = await drawMeter('00758', '407');
    const named = await modelDirWith([...MODEL_FILES, WHEEL_READER_FILE]);
    const read = async () => (await createLocalReader(loadConfig({ LOCAL_MODEL_DIR: named })))!.read(image, signal());
    t.equal((await read()).model, MODEL_NAME, 'without provenance.json, the model the service was built with');
    await writeFile(
      path.join(named, PROVENANCE_FILE),
      JSON.stringify({ set: 'own-2026-11-30', datasets: {}, files: {} }),
    );
    t.equal((await read()).model, 'own-2026-11-30');
    await writeFile(path.join(named, PROVENANCE_FILE), '{"set": ');
    await t.rejects(read(), /failed to load: .*provenance\.json is not JSON/);
  },
);

t.test(
  "the default set reads with strip readers of their own size, alone or beside the non-commercial set's",
  { skip: !weightsShipped && `no weights in ${MODEL_DIR}` },
  async (t) => {
    const { image } = await drawMeter('00758', '407');
    const clean = (await createLocalReader(loadConfig({})))!;
    t.match(await clean.read(image, signal()), { reading: '00758.407', model: 'local-clean-ppocr-v7' });
    const example = await readFile(path.join(import.meta.dirname, '../../examples/meter.jpg'));
    t.equal((await clean.read(example, signal())).reading, '02347');
    // The non-commercial readers 1 and 2 read 160 x 32 strips, the default set's reader 3 240 x 48.
    const mixed = await modelDirWith([...LOCALISER_FILES, ...READER_FILES.slice(0, 2)]);
    await symlink(path.join(DEFAULT_MODEL_DIR, READER_FILES[2]!), path.join(mixed, READER_FILES[2]!));
    const mixedReader = (await createLocalReader(loadConfig({ LOCAL_MODEL_DIR: mixed })))!;
    t.match(await mixedReader.read(image, signal()), { reading: '00758.407' });
  },
);

t.test(
  "a strip reader of another shape than spec.json's strips stops the model from loading, naming the file",
  { skip: !weightsShipped && `no weights in ${MODEL_DIR}` },
  async (t) => {
    const [firstReader, ...otherReaders] = READER_FILES;
    const mismatched = await modelDirWith([...LOCALISER_FILES, ...otherReaders]);
    // The wheel reader (48 x 30 inputs: a wheel, not a strip) where a strip reader should be.
    await symlink(path.join(MODEL_DIR, WHEEL_READER_FILE), path.join(mismatched, firstReader!));
    await t.rejects(
      createLocalReader(loadConfig({ LOCAL_MODEL_DIR: mismatched })),
      new RegExp(`failed to load: ${firstReader!.replace('.', '\\.')} reads 48 x 30 strips; spec.json's are 32 x 160`),
    );
  },
);

t.test(
  "the confidence is the product through the weights' calibration; weights without one report the product",
  { skip: !weightsShipped && `no weights in ${MODEL_DIR}` },
  async (t) => {
    const { image } = await drawMeter('00758', '407');
    const evidenceOf = (reading: { raw?: unknown }) => (reading.raw as { evidence: ConfidenceEvidence }).evidence;
    const shipped = parseCalibration(await readFile(path.join(MODEL_DIR, CALIBRATION_FILE), 'utf8'), CALIBRATION_FILE);
    const calibrated = await (await createLocalReader(loadConfig({ LOCAL_MODEL_DIR: MODEL_DIR })))!.read(
      image,
      signal(),
    );
    t.equal(calibrated.confidence, clampConfidence(calibrate(evidenceOf(calibrated), shipped)));
    t.ok(
      calibrated.confidence > clampConfidence(evidenceOf(calibrated).product),
      'the product undersells a drawn meter read right',
    );
    t.equal(
      Math.round(evidenceOf(calibrated).weakestDigit),
      Math.min(...calibrated.digitConfidences!),
      'the weakest digit is weighed',
    );

    const uncalibrated = await modelDirWith([...MODEL_FILES, WHEEL_READER_FILE]);
    const product = await (await createLocalReader(loadConfig({ LOCAL_MODEL_DIR: uncalibrated })))!.read(
      image,
      signal(),
    );
    t.equal(product.reading, calibrated.reading);
    t.equal(product.confidence, clampConfidence(evidenceOf(product).product));

    await writeFile(path.join(uncalibrated, CALIBRATION_FILE), '{"slope": 1.2');
    await t.rejects(createLocalReader(loadConfig({ LOCAL_MODEL_DIR: uncalibrated })), /calibration\.json is not JSON/);
  },
);

t.test(
  "the set's rolling rule reads its last wheel; a rolling.json that is not one stops the model from loading",
  { skip: !weightsShipped && `no weights in ${MODEL_DIR}` },
  async (t) => {
    const { image } = await drawMeter('00758', '407');
    const set = await modelDirWith(MODEL_FILES);
    const asFavoured = await (await createLocalReader(loadConfig({ LOCAL_MODEL_DIR: set })))!.read(image, signal());
    t.equal(asFavoured.reading, '00758.407');

    // A share this small reads the next digit wherever the readers give it anything at all.
    await writeFile(
      path.join(set, ROLLING_FILE),
      JSON.stringify({ nextDigitAt: { 'ddddd.ddd': 1e-12 }, chosenOn: 'a test' }),
    );
    const rolledOn = await (await createLocalReader(loadConfig({ LOCAL_MODEL_DIR: set })))!.read(image, signal());
    t.equal(rolledOn.reading, '00758.408');
    t.same(
      (rolledOn.raw as { readerTexts: string[] }).readerTexts,
      ['00758.408', '00758.408', '00758.408'],
      "each reader's own reading too, so that none is a rival of the reading",
    );

    await writeFile(path.join(set, ROLLING_FILE), '{"nextDigitAt": {"ddddd": 2}, "chosenOn": "a test"}');
    await t.rejects(createLocalReader(loadConfig({ LOCAL_MODEL_DIR: set })), /rolling\.json is not a rolling rule/);
  },
);

for (const set of [DEFAULT_MODEL_DIR, NONCOMMERCIAL_MODEL_DIR])
  t.test(`each shipped set: ${path.basename(set)}/`, { skip: !weightsShipped && `no weights in ${set}` }, async (t) => {
    const reader = (await createLocalReader(loadConfig({ LOCAL_MODEL_DIR: set })))! as MeterReader;
    t.equal(reader.name, 'local');
    const setName = (JSON.parse(await readFile(path.join(set, PROVENANCE_FILE), 'utf8')) as Provenance).set;

    t.test(
      'reads a drawn meter: reading, value, confidences and the counter box in the frame it was sent',
      async (t) => {
        for (const scale of [1, 2.2]) {
          const { image, counter } = await drawMeter('00758', '407', { scale });
          const result = await reader.read(image, signal());
          t.match(result.reading, /^\d{5}(\.\d{3})?$/);
          t.equal(result.value, Number(result.reading));
          t.ok(Number.isInteger(result.confidence) && result.confidence >= 0 && result.confidence <= 100);
          t.equal(result.model, setName);
          t.equal(result.digitConfidences?.length, result.reading.replace('.', '').length);
          t.equal(result.counterBox?.length, 4);
          const xs = result.counterBox!.map(([x]) => x),
            ys = result.counterBox!.map(([, y]) => y);
          const centre = [(Math.min(...xs) + Math.max(...xs)) / 2, (Math.min(...ys) + Math.max(...ys)) / 2];
          t.ok(
            Math.abs(centre[0]! - (counter.left + counter.width / 2)) < counter.width / 4,
            `box centre x at scale ${scale}`,
          );
          t.ok(
            Math.abs(centre[1]! - (counter.top + counter.height / 2)) < counter.height,
            `box centre y at scale ${scale}`,
          );
        }
      },
    );

    t.test("reads the README's first photo (examples/meter.jpg) as its counter shows it", async (t) => {
      const result = await reader.read(
        await readFile(path.join(import.meta.dirname, '../../examples/meter.jpg')),
        signal(),
      );
      t.equal(result.reading, '02347');
    });

    t.test('within a plausibility window: ok inside it; implausible, capped and explained, far from it', async (t) => {
      const { image } = await drawMeter('00758', '407');
      const free = await reader.read(image, signal());
      const around = { reference: free.reading, min: free.value - 0.01, max: free.value + 60 };
      t.match(await reader.read(image, signal(), around), {
        reading: free.reading,
        confidence: free.confidence,
        plausibility: 'ok',
      });
      const later = { reference: '05000.000', min: 4999.99, max: 5060 };
      const flagged = await reader.read(image, signal(), later);
      t.match(flagged, { reading: free.reading, plausibility: 'implausible' });
      t.ok(flagged.confidence <= IMPLAUSIBLE_CONFIDENCE_CAP);
      t.match(
        flagged.plausibilityReason,
        new RegExp(`${free.reading.replace('.', '\\.')} is below the reference reading 05000\\.000`),
      );
    });

    t.test(
      "within the meter's layout: its own is read as it is; a counter plainly in another is not forced into it, and the chain flags it",
      async (t) => {
        const { image } = await drawMeter('00758', '407');
        const free = await reader.read(image, signal());
        t.match(await reader.read(image, signal(), undefined, { whole: 5, fraction: 3 }), {
          reading: free.reading,
          confidence: free.confidence,
          plausibility: undefined,
        });
        // Every window of the photo reads 5 + 3: forced into five wheels, it is no reading at all.
        const fiveWheels = { whole: 5, fraction: 0, shownBy: '00750' };
        t.match(await reader.read(image, signal(), undefined, fiveWheels), {
          reading: free.reading,
          confidence: free.confidence,
        });
        const chain = new ReaderChain([reader], loadConfig({}));
        t.match(await chain.read(image, undefined, undefined, fiveWheels), {
          reading: free.reading,
          plausibility: 'implausible',
          confidence: IMPLAUSIBLE_CONFIDENCE_CAP,
          plausibilityReason: `${free.reading} has 5 whole and 3 fractional wheels; the meter has 5 and 0 (as 00750 shows)`,
        });
      },
    );

    t.test('a drawn meter turned sideways or upside down reads as it does upright', async (t) => {
      const { image } = await drawMeter('00758', '407');
      const upright = await reader.read(image, signal());
      for (const angle of [90, 180, 270]) {
        const turned = await reader.read(await sharp(image).rotate(angle).jpeg({ quality: 88 }).toBuffer(), signal());
        t.equal(turned.reading, upright.reading, `turned ${angle} degrees`);
      }
    });

    t.test(
      'a drawn meter tilted 45 degrees either way reads as it does level, its counter box around the counter',
      async (t) => {
        const { image, counter } = await drawMeter('00758', '407');
        const level = await reader.read(image, signal());
        for (const degrees of [45, -45]) {
          const tilted = await sharp(image).rotate(degrees, { background: '#8a8f94' }).jpeg({ quality: 88 }).toBuffer();
          const result = await reader.read(tilted, signal());
          t.equal(result.reading, level.reading, `tilted ${degrees} degrees`);
          const { width, height } = await sharp(tilted).metadata();
          const [dx, dy] = [counter.left + counter.width / 2 - 350, counter.top + counter.height / 2 - 250];
          const angle = (degrees * Math.PI) / 180;
          const expected = [
            width / 2 + dx * Math.cos(angle) - dy * Math.sin(angle),
            height / 2 + dx * Math.sin(angle) + dy * Math.cos(angle),
          ];
          const xs = result.counterBox!.map(([x]) => x),
            ys = result.counterBox!.map(([, y]) => y);
          const centre = [(Math.min(...xs) + Math.max(...xs)) / 2, (Math.min(...ys) + Math.max(...ys)) / 2];
          t.ok(
            Math.hypot(centre[0]! - expected[0]!, centre[1]! - expected[1]!) < counter.height,
            `box centre ${centre}, counter at ${expected}`,
          );
        }
      },
    );

    t.test("the counter box spans the wheels, not a logo beside them in the counter's frame", async (t) => {
      for (const logo of [false, true]) {
        const { image, wheels } = await drawMeter('00758', '407', { logo });
        const result = await reader.read(image, signal());
        const xs = result.counterBox!.map(([x]) => x);
        const halfWheel = (wheels.right - wheels.left) / 8 / 2;
        t.ok(
          Math.abs(Math.min(...xs) - wheels.left) < halfWheel,
          `left end ${Math.min(...xs)}, wheels from ${wheels.left}, logo ${logo}`,
        );
        t.ok(
          Math.abs(Math.max(...xs) - wheels.right) < halfWheel,
          `right end ${Math.max(...xs)}, wheels to ${wheels.right}, logo ${logo}`,
        );
        t.equal(result.reading, '00758.407', `logo ${logo}`);
      }
    });

    t.test('bytes that are not an image are unreadable', async (t) => {
      const error = await reader.read(Buffer.from('not a photo'), signal()).catch((e: unknown) => e);
      t.ok(error instanceof ReaderError);
      t.equal((error as ReaderError).kind, 'unreadable');
    });

    t.test(
      'a photo of no counter is unreadable: no window in it, or its best guess below the least sure reading',
      async (t) => {
        const [width, height] = [800, 600];
        const stripes = Buffer.alloc(width * height * 3);
        for (let y = 0; y < height; y++) {
          for (let x = 0; x < width; x++)
            stripes.fill(((x + y) >> 4) % 2 ? 255 : 0, (y * width + x) * 3, (y * width + x + 1) * 3);
        }
        const image = await sharp(stripes, { raw: { width, height, channels: 3 } })
          .jpeg()
          .toBuffer();
        const error = await reader.read(image, signal()).catch((e: unknown) => e);
        t.equal((error as ReaderError).kind, 'unreadable');
        // The default set's localisers find no window in the stripes; the non-commercial set's find one, read low.
        if (set === DEFAULT_MODEL_DIR) return void t.match((error as Error).message, /no counter window found/);
        const [, guessed, floor] =
          /has confidence (\d+); a reading has about (\d+) or more\)$/.exec((error as Error).message) ?? [];
        t.ok(Number(guessed) < Number(floor), `${(error as Error).message}`);
      },
    );

    t.test('an aborted read rejects with the abort reason', async (t) => {
      const { image } = await drawMeter('01348', '');
      const controller = new AbortController();
      controller.abort(new Error('caller gave up'));
      await t.rejects(reader.read(image, controller.signal), /caller gave up/);
    });

    t.test('concurrent reads each get their own answer', async (t) => {
      const photos = await Promise.all([
        drawMeter('00123', '456'),
        drawMeter('04071', '', { scale: 1.5 }),
        drawMeter('00950', '018', { scale: 0.8 }),
      ]);
      const oneByOne = [];
      for (const { image } of photos) oneByOne.push((await reader.read(image, signal())).reading);
      const together = await Promise.all(photos.map(({ image }) => reader.read(image, signal())));
      t.same(
        together.map((r) => r.reading),
        oneByOne,
      );
    });
  });
