import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { NONCOMMERCIAL_MODEL_DIR } from '../../src/config.ts';
import {
  CALIBRATION_FILE,
  calibrate,
  givenLayouts,
  logitOf,
  parseCalibration,
} from '../../src/readers/local/confidence.ts';

/** The non-commercial set's calibration (the default set ships none: models/MODEL_CARD.md). */
const SHIPPED = path.join(NONCOMMERCIAL_MODEL_DIR, CALIBRATION_FILE);
const TOLOKA = 'ddddd.ddd';
const BDCI = 'ddddd';

t.test('without a calibration the confidence is the product', async (t) => {
  for (const product of [0, 3, 42.5, 100])
    t.equal(calibrate({ product, weakestDigit: 50, layout: TOLOKA }, undefined), product);
});

t.test(
  'a calibration keeps the order of the products and of the weakest digits and stays within 0–100, at the ends too',
  async (t) => {
    const calibration = { slope: 0.7, weakestDigitSlope: 1.6, intercept: 2, layoutIntercepts: {}, fittedOn: 'a test' };
    const points = [0, 0.1, 1, 3, 10, 30, 50, 80, 99, 99.9, 100];
    for (const [name, sureness] of [
      ['product', (product: number) => ({ product, weakestDigit: 90, layout: TOLOKA })],
      ['weakest digit', (weakestDigit: number) => ({ product: 40, weakestDigit, layout: TOLOKA })],
    ] as const) {
      const confidences = points.map((value) => calibrate(sureness(value), calibration));
      for (const confidence of confidences)
        t.ok(Number.isFinite(confidence) && confidence > 0 && confidence < 100, `${name}: ${confidence}`);
      for (let i = 1; i < confidences.length; i++)
        t.ok(confidences[i]! >= confidences[i - 1]!, `${name} ${points[i]} is at least ${points[i - 1]}`);
    }
    t.equal(logitOf(50), 0);
    t.equal(
      calibrate(
        { product: 50, weakestDigit: 50, layout: TOLOKA },
        { slope: 1, weakestDigitSlope: 1, intercept: 0, layoutIntercepts: {}, fittedOn: 'identity at the middle' },
      ),
      50,
    );
  },
);

t.test("each layout takes its own intercept; a layout without one takes the calibration's intercept", async (t) => {
  const calibration = {
    slope: 1,
    weakestDigitSlope: 1,
    intercept: -1,
    layoutIntercepts: { [TOLOKA]: 1, [BDCI]: -1 },
    fittedOn: 'a test',
  };
  const middle = { product: 50, weakestDigit: 50 };
  t.equal(calibrate({ ...middle, layout: TOLOKA }, calibration), 100 / (1 + Math.exp(-1)));
  t.equal(calibrate({ ...middle, layout: BDCI }, calibration), 100 / (1 + Math.exp(1)));
  t.equal(
    calibrate({ ...middle, layout: 'dddddd' }, calibration),
    100 / (1 + Math.exp(1)),
    'six wheels: the intercept',
  );
});

t.test('one wheel at even odds is less sure than the same product spread over every wheel', async (t) => {
  const shipped = parseCalibration(await readFile(SHIPPED, 'utf8'), SHIPPED);
  // Both products 42: every wheel at 99 but the last at 46 (a rolling last wheel), or all eight wheels at 89.7.
  const oneWheelInDoubt = calibrate({ product: 42, weakestDigit: 46, layout: TOLOKA }, shipped);
  const spread = calibrate({ product: 42, weakestDigit: 89.7, layout: TOLOKA }, shipped);
  t.ok(oneWheelInDoubt < 90, `one wheel in doubt at ${oneWheelInDoubt}`);
  t.ok(spread > oneWheelInDoubt + 5, `spread at ${spread}`);
});

t.test('the shipped calibration: products that undersell the reader are raised', async (t) => {
  const shipped = parseCalibration(await readFile(SHIPPED, 'utf8'), SHIPPED);
  t.ok(
    calibrate({ product: 50, weakestDigit: 80, layout: TOLOKA }, shipped) > 90,
    'on the calibration photos every Toloka reading at 50–60 was exact',
  );
  t.ok(
    calibrate({ product: 3, weakestDigit: 30, layout: TOLOKA }, shipped) < 50,
    'the floor of a reading stays a guess',
  );
  t.ok(shipped.weakestDigitSlope > 0);
});

t.test(
  'the shipped calibration: a five-wheel reading is less sure than an eight-wheel one of the same product and weakest wheel',
  async (t) => {
    // The wheel reader votes on eight-wheel counters only: without it, the strip readers' sureness is worth less.
    const shipped = parseCalibration(await readFile(SHIPPED, 'utf8'), SHIPPED);
    t.same(Object.keys(shipped.layoutIntercepts).sort(), [BDCI, TOLOKA]);
    const sureness = { product: 58, weakestDigit: 58 };
    t.ok(calibrate({ ...sureness, layout: BDCI }, shipped) + 5 < calibrate({ ...sureness, layout: TOLOKA }, shipped));
    t.equal(
      shipped.intercept,
      Math.min(...Object.values(shipped.layoutIntercepts)),
      'an unseen layout is read as the least sure one',
    );
    t.match(shipped.fittedOn, /calibration photos/);
  },
);

t.test('a calibration fitted before the weakest digit was weighed reads as the product alone', async (t) => {
  const old = parseCalibration('{"slope": 1.26, "intercept": 2.93, "fittedOn": "v16"}', 'c.json');
  t.equal(old.weakestDigitSlope, 0);
  t.same(old.layoutIntercepts, {});
  t.equal(
    calibrate({ product: 42, weakestDigit: 46, layout: TOLOKA }, old),
    calibrate({ product: 42, weakestDigit: 99, layout: BDCI }, old),
  );
});

t.test(
  "a layout under half of the photo's readings read is no surer than that share; a layout half of them read or more keeps its sureness",
  async (t) => {
    t.equal(givenLayouts(60, 1), 60);
    t.equal(givenLayouts(60, 0.5), 60, 'half is no minority');
    t.equal(givenLayouts(60, 6 / 17), 60 * (6 / 17), 'a five-wheel reading where 6 of 17 readings see five wheels');
    t.equal(givenLayouts(60, 0), 0);
  },
);

t.test('a file that is not a calibration is refused, naming the file', async (t) => {
  for (const [text, message] of [
    ['{"slope": 1.2', /^c\.json is not JSON/],
    ['null', /^c\.json is not a calibration/],
    ['{"slope": -1, "intercept": 0, "fittedOn": "x"}', /positive number "slope"/],
    ['{"slope": 1, "intercept": "0", "fittedOn": "x"}', /a number "intercept"/],
    ['{"slope": 1, "intercept": 0}', /a "fittedOn" text/],
    ['{"slope": 1, "weakestDigitSlope": -0.5, "intercept": 0, "fittedOn": "x"}', /"weakestDigitSlope" of 0 or more/],
    ['{"slope": 1, "weakestDigitSlope": "1", "intercept": 0, "fittedOn": "x"}', /"weakestDigitSlope" of 0 or more/],
    [
      '{"slope": 1, "intercept": 0, "layoutIntercepts": [1], "fittedOn": "x"}',
      /"layoutIntercepts", a number for each layout/,
    ],
    ['{"slope": 1, "intercept": 0, "layoutIntercepts": {"ddddd": "1"}, "fittedOn": "x"}', /"layoutIntercepts"/],
    ['{"slope": 1, "intercept": 0, "layoutIntercepts": {"five": 1}, "fittedOn": "x"}', /"layoutIntercepts"/],
  ] as const) {
    t.throws(() => parseCalibration(text, 'c.json'), message, text);
  }
});
