import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import t from 'tap';
import { evalReader } from '../../src/cli/eval.ts';
import { SIMULATED_MAX_CONSUMPTION_M3, SIMULATED_TOLERANCE_M3 } from '../../src/eval/history.ts';
import type { MeterLayout } from '../../src/readers/layout.ts';
import { ReaderError, type MeterReader, type PlausibilityWindow } from '../../src/readers/reader.ts';

/** The photos are plain images told apart by their width, which survives the service's normalisation. */
const PHOTO_WIDTHS = { a: 10, b: 20, c: 30 };

/** Answers from a table keyed by the photo's width, so the test controls every reading. */
function tableReader(answers: Record<string, { reading: string; confidence: number } | 'unreadable'>): MeterReader {
  return {
    name: 'table',
    async read(image) {
      const { width } = await sharp(image).metadata();
      const name = Object.entries(PHOTO_WIDTHS).find(([, w]) => w === width)![0];
      const answer = answers[name];
      if (!answer || answer === 'unreadable') throw new ReaderError('unreadable', 'no counter');
      return { ...answer, value: Number(answer.reading), model: 'table', raw: null };
    },
  };
}

async function dataset(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'meterlens-evalcmd-'));
  await writeFile(
    path.join(dir, 'labels.csv'),
    'file,reading,alternatives\na.jpg,00720,00720|00721\nb.jpg,454.0,\nc.jpg,1,\n',
  );
  for (const [name, width] of Object.entries(PHOTO_WIDTHS)) {
    await sharp({ create: { width, height: 8, channels: 3, background: '#808080' } })
      .jpeg()
      .toFile(path.join(dir, `${name}.jpg`));
  }
  await writeFile(path.join(dir, 'only-ab.txt'), 'a.jpg\nb.jpg\n');
  return dir;
}

async function captureLog(run: () => Promise<number>): Promise<{ code: number; output: string }> {
  const lines: string[] = [];
  const original = console.log;
  console.log = (...parts: unknown[]) => lines.push(parts.join(' '));
  try {
    return { code: await run(), output: lines.join('\n') };
  } finally {
    console.log = original;
  }
}

const reader = tableReader({
  a: { reading: '00721', confidence: 97 },
  b: { reading: '00454.000', confidence: 85 },
  c: 'unreadable',
});

t.test('--json: metrics per dataset and the model load time', async (t) => {
  const dir = await dataset();
  const { code, output } = await captureLog(() =>
    evalReader(['--dataset', dir, '--json'], 'table', async () => reader),
  );
  t.equal(code, 0);
  const report = JSON.parse(output);
  t.equal(report.reader, 'table');
  t.type(report.modelLoadMs, 'number');
  const summary = report.datasets[0].summary;
  t.equal(summary.photos, 3);
  t.equal(summary.exact, 2 / 3);
  t.same(
    summary.selective.map((s: { coverage: number }) => s.coverage),
    [2 / 3, 2 / 3, 1 / 3, 1 / 3],
  );
  t.equal(summary.worst[0].file, 'c.jpg');
  t.match(summary.worst[0].error, /unreadable/);
  t.same(
    summary.reliability.filter((bin: { readings: number }) => bin.readings > 0),
    [
      { from: 80, to: 90, readings: 1, meanConfidence: 85, accuracy: 1 },
      { from: 90, to: 100, readings: 1, meanConfidence: 97, accuracy: 1 },
    ],
  );
  t.ok(Math.abs(summary.calibration.brier - (0.15 ** 2 + 0.03 ** 2) / 2) < 1e-12);
  t.ok(Math.abs(summary.calibration.expectedError - (15 + 3) / 2) < 1e-9);
});

t.test('--chain names the readers evalReader is given, and the report names the chain', async (t) => {
  const dir = await dataset();
  let chain: string[] = [];
  const { output } = await captureLog(() =>
    evalReader(['--dataset', dir, '--chain', 'local, openai', '--json'], 'local', async (names) => {
      chain = names;
      return reader;
    }),
  );
  t.same(chain, ['local', 'openai']);
  t.equal(JSON.parse(output).reader, 'local, openai');
});

t.test('a chain that cannot be built is one line that says why, exit 1', async (t) => {
  const dir = await dataset();
  const errors: string[] = [];
  const original = console.error;
  console.error = (...parts: unknown[]) => errors.push(parts.join(' '));
  try {
    const code = await evalReader(['--dataset', dir, '--chain', 'nope'], 'local', async () => {
      throw new Error('READER_CHAIN names an unknown reader "nope"');
    });
    t.equal(code, 1);
  } finally {
    console.error = original;
  }
  t.same(errors, ['READER_CHAIN names an unknown reader "nope"']);
});

t.test('a file that is not an image counts as a miss that names the problem', async (t) => {
  const dir = await dataset();
  await writeFile(path.join(dir, 'c.jpg'), 'not a photo');
  const { output } = await captureLog(() => evalReader(['--dataset', dir, '--json'], 'table', async () => reader));
  const summary = JSON.parse(output).datasets[0].summary;
  t.equal(summary.photos, 3);
  t.equal(summary.worst[0].file, 'c.jpg');
  t.match(summary.worst[0].error, /image: The file is not an image/);
});

t.test('a photo labels.csv names but that is missing counts as one miss that says so', async (t) => {
  const dir = await dataset();
  await rm(path.join(dir, 'c.jpg'));
  const { code, output } = await captureLog(() =>
    evalReader(['--dataset', dir, '--json'], 'table', async () => reader),
  );
  t.equal(code, 0);
  const summary = JSON.parse(output).datasets[0].summary;
  t.equal(summary.photos, 3);
  t.equal(summary.worst[0].file, 'c.jpg');
  t.match(summary.worst[0].error, /missing: labels.csv names it, but there is no such file/);
});

t.test('a folder without labels.csv is refused before the model loads, saying what the file holds', async (t) => {
  let created = 0;
  const dir = await mkdtemp(path.join(tmpdir(), 'meterlens-evalcmd-'));
  const error = await evalReader(['--dataset', dir], 'table', async () => {
    created++;
    return reader;
  }).catch((error: Error) => error);
  t.match(error, { message: /^no .*labels\.csv \(a "file,reading\[,alternatives\]" header, then one photo a line\)$/ });
  t.equal(created, 0);
});

t.test('--files limits the photos; the text report names the misreads', async (t) => {
  const dir = await dataset();
  const { code, output } = await captureLog(() =>
    evalReader(['--dataset', dir, '--files', path.join(dir, 'only-ab.txt')], 'table', async () => reader),
  );
  t.equal(code, 0);
  t.match(output, /table on .*: 2 photos/);
  t.match(output, /exact reading\s+100\.0%/);
  t.match(output, /confidence ≥ 95\s+100\.0%  of  50\.0%/);
  t.match(output, /table model load: \d+ ms/);
  t.match(
    output,
    /reliability \(confidence bin: readings, mean confidence, exact\)\n(.*\n){8}\s+80–90\s+1\s+85\.0\s+100\.0%/,
  );
  t.match(output, /calibration\s+Brier 0\.\d{3}, expected calibration error \d+\.\d points \(lower is better\)/);
});

t.test("--baseline: an earlier --json report's metrics beside this run's", async (t) => {
  const dir = await dataset();
  const earlier = tableReader({
    a: { reading: '00720', confidence: 97 },
    b: { reading: '00455.000', confidence: 60 },
    c: 'unreadable',
  });
  const baseline = path.join(dir, 'baseline.json');
  await writeFile(
    baseline,
    (await captureLog(() => evalReader(['--dataset', dir, '--json'], 'table', async () => earlier))).output,
  );
  const { code, output } = await captureLog(() =>
    evalReader(['--dataset', dir, '--baseline', baseline], 'table', async () => reader),
  );
  t.equal(code, 0);
  t.match(output, /table on .*: 3 photos\n  exact reading\s+66\.7%/, "this run's report as without a baseline");
  t.match(
    output,
    /table on .*, beside .*baseline\.json: 3 and 3 photos\n\s+baseline\s+this run\n  exact reading\s+33\.3%\s+66\.7%\n/,
  );
  t.match(output, /exact at confidence ≥ 80\s+100\.0%\s+100\.0%\n  share at confidence ≥ 80\s+33\.3%\s+66\.7%/);
  t.match(output, /Brier score\s+0\.\d{3}\s+0\.\d{3}\n  calibration error \(points\)\s+\d+\.\d\s+\d+\.\d\n/);

  const older = JSON.parse(await readFile(baseline, 'utf8'));
  delete older.datasets[0].summary.calibration;
  await writeFile(baseline, JSON.stringify(older));
  const beforeScores = await captureLog(() =>
    evalReader(['--dataset', dir, '--baseline', baseline], 'table', async () => reader),
  );
  t.match(
    beforeScores.output,
    /Brier score\s+n\/a\s+0\.\d{3}\n/,
    'a report written before the calibration scores has none',
  );

  await writeFile(baseline, JSON.stringify({ reader: 'table', modelLoadMs: 1, datasets: [] }));
  const elsewhere = await captureLog(() =>
    evalReader(['--dataset', dir, '--baseline', baseline], 'table', async () => reader),
  );
  t.match(elsewhere.output, /no meterlens-evalcmd-\w+ in .*baseline\.json/);
});

t.test('--help prints the usage and exits 0', async (t) => {
  const { code, output } = await captureLog(() => evalReader(['--help'], 'table', async () => reader));
  t.equal(code, 0);
  t.match(output, /usage: meterlens eval --dataset DIR/);
});

t.test(
  'bad arguments exit 2 without loading a model; an unreadable --baseline or a missing model exits 1',
  async (t) => {
    let created = 0;
    const create = async () => {
      created++;
      return reader;
    };
    const quiet = async (args: string[], make: () => Promise<MeterReader | undefined> = create) => {
      const original = console.error;
      console.error = () => {};
      try {
        return await evalReader(args, 'table', make);
      } finally {
        console.error = original;
      }
    };
    t.equal(await quiet([]), 2);
    t.equal(await quiet(['--dataset', 'x', '--validation']), 2);
    t.equal(await quiet(['--dataset', 'x', '--worst', 'many']), 2);
    t.equal(await quiet(['--bogus']), 2);
    t.equal(await quiet(['--dataset', 'x', '--json', '--baseline', 'earlier.json']), 2);
    t.equal(await quiet(['--dataset', 'x', '--baseline', path.join(tmpdir(), 'meterlens-no-such-report.json')]), 1);
    t.equal(created, 0);
    t.equal(await quiet(['--dataset', await dataset()], async () => undefined), 1);
  },
);

t.test(
  '--previous: each photo is read within a window from a drawn history, and the report says what the window did',
  async (t) => {
    const dir = await dataset();
    const windows: Record<string, PlausibilityWindow | undefined> = {};
    const withinWindows: MeterReader = {
      name: 'table',
      async read(image, signal, window) {
        const reading = await reader.read(image, signal);
        windows[reading.reading] = window;
        // The first photo is read as the local reader reads within a window: corrected from a free reading below it,
        // surely enough to be kept local at the default ESCALATE_BELOW.
        return reading.reading === '00721'
          ? { ...reading, confidence: 99, plausibility: 'corrected', unconstrainedReading: '00121' }
          : { ...reading, reading: '00354.000', value: 354 };
      },
    };
    const { code, output } = await captureLog(() =>
      evalReader(['--dataset', dir, '--previous', '5-10', '--json'], 'table', async () => withinWindows),
    );
    t.equal(code, 0);
    const report = JSON.parse(output);
    t.equal(report.previous, '5-10');
    const reference = Number(windows['00721']!.reference);
    t.ok(reference >= 710 && reference <= 715, `the previous reading ${reference} is 5 to 10 m³ below the label`);
    t.same(windows['00721'], {
      reference: windows['00721']!.reference,
      min: reference - SIMULATED_TOLERANCE_M3,
      max: reference + SIMULATED_MAX_CONSUMPTION_M3,
    });
    const summary = report.datasets[0].summary;
    t.same(summary.plausibility, {
      withWindow: 2,
      implausible: 1 / 3,
      noReading: 1 / 3,
      flagged: 2 / 3,
      corrected: 1 / 3,
      corrections: 1,
      correctionsWholeUnitsRight: 1,
      correctionsExact: 1,
      notFlagged: 1,
      wholeUnitExactNotFlagged: 1,
      exactNotFlagged: 1,
      confident: { threshold: 97, coverage: 1 / 3, accuracy: 1, wholeUnitAccuracy: 1, wholeUnitMisreads: 0 },
    });
    t.match(
      summary.worst.find((c: { file: string }) => c.file === 'b.jpg'),
      { predicted: '00354.000', confidence: 20, plausibility: 'implausible' },
    );

    const again = await captureLog(() =>
      evalReader(['--dataset', dir, '--previous', '5-10'], 'table', async () => withinWindows),
    );
    t.match(again.output, /implausible\s+33\.3%/);
    t.match(again.output, /corrected\s+33\.3%  \(1 of 1 right in whole units, 1 exact\)/);
    t.match(
      again.output,
      /flagged\s+66\.7%  \(no reading 33\.3%, the rest implausible\)/,
      'a photo with no reading is flagged: nobody bills it',
    );
    t.match(again.output, /readings not flagged: 1; whole units exact 100\.0%, exact 100\.0%/);
    t.match(again.output, /b\.jpg: read 00354\.000 at 20 \(implausible\)/);
    t.equal(Number(windows['00721']!.reference), reference, 'the same history every run');
  },
);

t.test(
  '--previous dated|manual: each photo read with a grown past as the service judges it; needs review, and what the rest would bill',
  async (t) => {
    const dir = await dataset();
    const seen: Record<string, { window?: PlausibilityWindow; layout?: MeterLayout }> = {};
    const answering = (answers: Parameters<typeof tableReader>[0]): MeterReader => {
      const table = tableReader(answers);
      return {
        name: 'table',
        async read(image, signal, window, layout) {
          const { width } = await sharp(image).metadata();
          seen[width] = { window, layout };
          return table.read(image, signal);
        },
      };
    };
    // a.jpg (00720 or 00721) read 15 m³ high, surely: inside the physical window and a household's usual use since a
    // reference 20–40 days earlier, so only its truth tells it is wrong.
    const misreading = answering({
      a: { reading: '00735', confidence: 99 },
      b: { reading: '00454.000', confidence: 95 },
      c: 'unreadable',
    });
    const { code, output } = await captureLog(() =>
      evalReader(['--dataset', dir, '--previous', 'dated', '--json'], 'table', async () => misreading),
    );
    t.equal(code, 0);
    const report = JSON.parse(output);
    t.equal(report.previous, 'dated');
    const reference = seen[PHOTO_WIDTHS.a]!.window!.reference;
    t.match(reference, /^00[67]\d\d$/, `a's reference ${reference} is written as its five-wheel dial shows it`);
    t.same(
      seen[PHOTO_WIDTHS.a]!.layout,
      { whole: 5, fraction: 0, shownBy: reference },
      'and is the layout it is read in',
    );
    t.match(
      seen[PHOTO_WIDTHS.b]!.layout,
      { whole: 5, fraction: 3 },
      "b's label 454.0 drops its zeros: its reference has them, in the trained 5 + 3",
    );
    t.match(seen[PHOTO_WIDTHS.b]!.window!.reference, /^00[34]\d\d\.\d{3}$/);
    const review = report.datasets[0].summary.review;
    t.match(review, { needsReview: 1 / 3, billable: 2, wholeUnitsRightBillable: 0.5 });
    t.match(review.billingErrors, [
      { file: 'a.jpg', reading: '00735', reference, billed: 735 - Number(reference), truly: 721 - Number(reference) },
    ]);

    const text = await captureLog(() =>
      evalReader(['--dataset', dir, '--previous', 'dated'], 'table', async () => misreading),
    );
    t.match(
      text.output,
      /needs review\s+33\.3%  \(no reading 33\.3%, implausible 0\.0% \(0\.0% right\), suspicious 0\.0% \(0\.0% right\), less confident 0\.0% \(0\.0% right\); right: in whole units all the same\)/,
    );
    t.match(text.output, /below {2}90\s+33\.3%\s+2\s+50\.0%\s+1\n/, 'and at other review thresholds');
    t.match(
      text.output,
      /not needing review: 2; whole units right 50\.0%; billing errors 1 \(off the true consumption by more than 1 m³ and 10% of it\)/,
    );
    t.match(
      text.output,
      new RegExp(
        `a\\.jpg: read 00735 against ${reference}, bills ${735 - Number(reference)} m³, truly ${721 - Number(reference)} m³`,
      ),
    );

    const otherLayout = answering({
      a: { reading: '00721.000', confidence: 99 },
      b: { reading: '00454.000', confidence: 95 },
      c: 'unreadable',
    });
    const manual = JSON.parse(
      (
        await captureLog(() =>
          evalReader(['--dataset', dir, '--previous', 'manual', '--json'], 'table', async () => otherLayout),
        )
      ).output,
    );
    t.equal(seen[PHOTO_WIDTHS.a]!.layout?.whole, 5, "manual: the layout the person's readings show");
    t.match(
      manual.datasets[0].summary.review,
      { needsReview: 2 / 3, reasons: { noReading: 1 / 3, implausible: 1 / 3 }, billable: 1, billingErrors: [] },
      'a reading in another layout needs review',
    );
    t.match(manual.datasets[0].summary.worst, [{ file: 'c.jpg' }]);
    t.match(
      manual.datasets[0].summary.plausibility,
      { implausible: 1 / 3 },
      'a.jpg, read in three red wheels where its meter has none, is implausible',
    );
  },
);

t.test('--previous needs a range A-B of m³ with A ≤ B, dated or manual', async (t) => {
  const original = console.error;
  console.error = () => {};
  try {
    for (const spec of ['30-0', 'thirty', '-5-0', '5', 'Dated', 'dated,manual', ''])
      t.equal(await evalReader(['--dataset', 'x', '--previous', spec], 'table', async () => reader), 2, spec);
  } finally {
    console.error = original;
  }
});

const SHARED_DATASETS = path.join(import.meta.dirname, '..', '..', '..', 'shared', 'datasets');

t.test(
  '--validation: each dataset, then both together, which the bars on the whole split are read off',
  { skip: !existsSync(SHARED_DATASETS) && 'no ../shared/datasets' },
  async (t) => {
    const everyPhotoZero: MeterReader = {
      name: 'zero',
      read: async () => ({ reading: '00000', value: 0, confidence: 50, model: 'zero', raw: null }),
    };
    const { code, output } = await captureLog(() =>
      evalReader(['--validation', '--json', '--worst', '0'], 'zero', async () => everyPhotoZero),
    );
    t.equal(code, 0);
    const report = JSON.parse(output);
    t.same(
      report.datasets.map((dataset: { name: string }) => dataset.name),
      ['toloka', 'bdci2020'],
    );
    const [toloka, bdci] = report.datasets.map((dataset: { summary: { photos: number } }) => dataset.summary.photos);
    t.equal(report.together.photos, toloka + bdci);
    t.equal(report.together.selective[0].coverage, 1, 'every photo read at 50');
  },
);
