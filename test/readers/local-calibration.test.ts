import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { CALIBRATION_FILE, calibrate, parseCalibration, productGivenLayouts, productLogit } from '../../src/readers/local/confidence.ts';

const SHIPPED = path.resolve(import.meta.dirname, '..', '..', 'models', CALIBRATION_FILE);

t.test('without a calibration the confidence is the product', async (t) => {
  for (const product of [0, 3, 42.5, 100]) t.equal(calibrate(product, undefined), product);
});

t.test('a calibration keeps the order of the products and stays within 0–100, at the ends too', async (t) => {
  const calibration = { slope: 1.3, intercept: 3, fittedOn: 'a test' };
  const products = [0, 0.1, 1, 3, 10, 30, 50, 80, 99, 99.9, 100];
  const confidences = products.map((product) => calibrate(product, calibration));
  for (const confidence of confidences) t.ok(Number.isFinite(confidence) && confidence > 0 && confidence < 100, `${confidence}`);
  for (let i = 1; i < confidences.length; i++) t.ok(confidences[i]! >= confidences[i - 1]!, `${products[i]} is at least ${products[i - 1]}`);
  t.equal(productLogit(50), 0);
  t.equal(calibrate(50, { slope: 1, intercept: 0, fittedOn: 'identity at the middle' }), 50);
});

t.test('the shipped calibration: products that undersell the reader are raised', async (t) => {
  const shipped = parseCalibration(await readFile(SHIPPED, 'utf8'), SHIPPED);
  t.ok(calibrate(50, shipped) > 90, 'on the calibration photos every Toloka reading at 50–60 was exact');
  t.ok(calibrate(3, shipped) < 50, 'the floor of a reading stays a guess');
  t.match(shipped.fittedOn, /calibration photos/);
});

t.test("a layout under half of the photo's readings read is no surer than that share; a layout half of them read or more keeps its product", async (t) => {
  t.equal(productGivenLayouts(60, 1), 60);
  t.equal(productGivenLayouts(60, 0.5), 60, 'half is no minority');
  t.equal(productGivenLayouts(60, 6 / 17), 60 * (6 / 17), 'a five-wheel reading where 6 of 17 readings see five wheels');
  t.equal(productGivenLayouts(60, 0), 0);
});

t.test('a file that is not a calibration is refused, naming the file', async (t) => {
  for (const [text, message] of [
    ['{"slope": 1.2', /^c\.json is not JSON/],
    ['null', /^c\.json is not a calibration/],
    ['{"slope": -1, "intercept": 0, "fittedOn": "x"}', /positive number "slope"/],
    ['{"slope": 1, "intercept": "0", "fittedOn": "x"}', /a number "intercept"/],
    ['{"slope": 1, "intercept": 0}', /a "fittedOn" text/],
  ] as const) {
    t.throws(() => parseCalibration(text, 'c.json'), message, text);
  }
});
