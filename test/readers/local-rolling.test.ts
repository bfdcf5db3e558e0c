import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { DEFAULT_MODEL_DIR } from '../../src/config.ts';
import type { LayoutReading } from '../../src/readers/local/decode.ts';
import { ROLLING_FILE, parseRolling, readLastWheel, unrolled } from '../../src/readers/local/rolling.ts';
import { LAYOUTS } from '../../src/readers/local/spec.ts';

/** A strip read `text` whose last wheel the readers gave `last` (probabilities of 0–9), the other wheels sure. */
function strip(text: string, last: number[]): LayoutReading {
  const digits = [...text.replaceAll('.', '')].map(Number);
  const digitDistributions = digits.map((digit, wheel) =>
    wheel === digits.length - 1 ? last : Array.from({ length: 10 }, (_, d) => (d === digit ? 1 : 0)),
  );
  return {
    text,
    digitProbabilities: digitDistributions.map((distribution, wheel) => distribution[digits[wheel]!]!),
    digitDistributions,
    layoutFit: 1,
  };
}

/** Probabilities of 0–9 with `shares` on the digits named, the rest nothing. */
function wheel(shares: Record<number, number>): number[] {
  return Array.from({ length: 10 }, (_, digit) => shares[digit] ?? 0);
}

const rolling = { nextDigitAt: { ddddd: 0.1 }, chosenOn: 'a test' };

t.test('the last wheel reads its next digit once the readers give it the layout’s share', async (t) => {
  const between = readLastWheel(strip('00453', wheel({ 3: 0.85, 4: 0.1, 7: 0.05 })), rolling);
  t.equal(between.text, '00454', '0.1 of 0.85 is 0.085: the next digit has more');
  t.ok(Math.abs(between.digitProbabilities.at(-1)! - 1 / 1.9) < 1e-9, 'as sure as the wheel is between the two');
  t.ok(Math.abs(between.digitDistributions.at(-1)!.reduce((sum, p) => sum + p, 0) - 1) < 1e-9, 'still sums to 1');
  const unsure = readLastWheel(strip('00453', wheel({ 3: 0.6, 4: 0.01 })), rolling);
  t.equal(unsure.text, '00453');
  t.ok(
    unsure.digitProbabilities.at(-1)! < 0.6,
    'no surer for what the readers gave no digit (blank, the point): the digits keep their share',
  );
  t.same(between.digitProbabilities.slice(0, -1), [1, 1, 1, 1], 'the other wheels as they were');

  const settled = readLastWheel(strip('00453', wheel({ 3: 0.95, 4: 0.05 })), rolling);
  t.equal(settled.text, '00453', '0.05 is under 0.1 of 0.95');
  t.ok(settled.digitProbabilities.at(-1)! < 0.95, 'less sure than the readers: the next digit is half way to it');

  const before = readLastWheel(strip('00453', wheel({ 3: 0.6, 2: 0.4 })), rolling);
  t.equal(before.text, '00453', 'only the next digit is weighed up, not the one before');
  t.equal(before.digitProbabilities.at(-1), 0.6);
});

t.test('the digit read decides, and a tie reads the next one', async (t) => {
  const tie = readLastWheel(strip('00453', wheel({ 3: 0.5, 4: 0.05 })), rolling);
  t.equal(tie.text, '00454', 'exactly the share');
  const decodedApart = strip('00453', wheel({ 5: 0.6, 3: 0.3, 4: 0.05 }));
  t.equal(
    readLastWheel(decodedApart, rolling).text,
    '00454',
    'a reader whose text is not its likeliest digit (decoded in a layout) rolls on from the digit it read',
  );
  const nothing = strip('00453', wheel({}));
  t.same(readLastWheel(nothing, rolling), nothing, 'a wheel the readers gave no digit stays as it is');
  t.equal(unrolled('00454'), '00453');
});

t.test('a wheel on 9 keeps it: rolling on would carry into the wheels to its left', async (t) => {
  const nine = strip('00129', wheel({ 9: 0.7, 0: 0.3 }));
  t.same(readLastWheel(nine, rolling), nine);
});

t.test('a layout the rule does not name, or no rule, reads the digit the readers favour', async (t) => {
  const fractional = strip('00453.217', wheel({ 7: 0.7, 8: 0.3 }));
  t.same(readLastWheel(fractional, rolling), fractional);
  const whole = strip('00453', wheel({ 3: 0.7, 4: 0.3 }));
  t.same(readLastWheel(whole, undefined), whole);
});

t.test('a rolling.json that is not one names the file and what it needs', async (t) => {
  t.same(parseRolling('{"nextDigitAt": {"ddddd": 0.05}, "chosenOn": "x"}', 'f'), {
    nextDigitAt: { ddddd: 0.05 },
    chosenOn: 'x',
  });
  t.throws(() => parseRolling('{"nextDigitAt"', 'set/rolling.json'), /set\/rolling\.json is not JSON/);
  for (const bad of [
    'null',
    '{"chosenOn": "x"}',
    '{"nextDigitAt": {"ddddd": 0}, "chosenOn": "x"}',
    '{"nextDigitAt": {"ddddd": 1.5}, "chosenOn": "x"}',
    '{"nextDigitAt": {"ddddd": "0.1"}, "chosenOn": "x"}',
    '{"nextDigitAt": {"5 wheels": 0.1}, "chosenOn": "x"}',
    '{"nextDigitAt": [0.1], "chosenOn": "x"}',
    '{"nextDigitAt": {"ddddd": 0.1}}',
  ])
    t.throws(() => parseRolling(bad, 'set/rolling.json'), /set\/rolling\.json is not a rolling rule: it needs/, bad);
});

t.test('the default set ships its rule, chosen on the calibration photos', async (t) => {
  const shipped = parseRolling(await readFile(path.join(DEFAULT_MODEL_DIR, ROLLING_FILE), 'utf8'), ROLLING_FILE);
  t.ok(Object.keys(shipped.nextDigitAt).length > 0);
  for (const layout of Object.keys(shipped.nextDigitAt))
    t.ok(LAYOUTS.includes(layout), `${layout} is a trained layout`);
  t.match(shipped.chosenOn, /calibration/);
});
