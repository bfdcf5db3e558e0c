import t from 'tap';
import {
  combineReadings,
  decodeCtc,
  decodeInLayout,
  formatReading,
  mostChosenLayout,
  mostProbableInRange,
  readInLayouts,
  readWithinValues,
  type LayoutReading,
} from '../../src/readers/local/decode.ts';
import { ALPHABET, WHEEL_READER_WEIGHT } from '../../src/readers/local/spec.ts';

const CLASSES = ALPHABET.length + 1;

/** Per-step probabilities where each step puts `p` on one symbol ('-' = blank) and spreads the rest. */
function steps(path: string, p = 0.9): Float32Array {
  const out = new Float32Array(path.length * CLASSES).fill((1 - p) / (CLASSES - 1));
  [...path].forEach((symbol, step) => {
    out[step * CLASSES + (symbol === '-' ? 0 : ALPHABET.indexOf(symbol) + 1)] = p;
  });
  return out;
}

t.test('CTC: repeats collapse, a blank separates a repeated digit, leading zeros stay', async (t) => {
  t.equal(decodeCtc(steps('-00-0--11-3-.-44'), 16, CLASSES).text, '0013.4');
  t.equal(decodeCtc(steps('0-0-7-5-8-.-4-0-7'), 17, CLASSES).text, '00758.407');
  t.equal(decodeCtc(steps('----'), 4, CLASSES).text, '');
});

t.test('CTC: each digit is placed at the step where its run peaks, the point not counted', async (t) => {
  const probabilities = steps('-11-2.-3');
  probabilities[2 * CLASSES + 2] = 0.95; // the '1' run peaks at its second step
  t.same(decodeCtc(probabilities, 8, CLASSES).digitSteps, [2, 4, 7]);
});

t.test('CTC: a digit is as sure as the best step of its run; the point is kept apart', async (t) => {
  const probabilities = steps('1-2.3');
  probabilities[0 * CLASSES + 2] = 0.6; // the '1' run: one step at 0.6 ...
  const decoded = decodeCtc(probabilities, 5, CLASSES);
  t.equal(decoded.text, '12.3');
  t.same(
    decoded.digitProbabilities.map((p) => Number(p.toFixed(2))),
    [0.6, 0.9, 0.9],
  );
  t.equal(decoded.pointProbability?.toFixed(2), '0.90');
  const longer = steps('11-2');
  longer[1 * CLASSES + 2] = 0.95; // ... a longer run takes its peak
  t.equal(decodeCtc(longer, 4, CLASSES).digitProbabilities[0]!.toFixed(2), '0.95');
});

t.test('CTC: each digit carries the probabilities of every digit where its run peaks', async (t) => {
  const probabilities = steps('11-2');
  probabilities[1 * CLASSES + 2] = 0.95; // the '1' run peaks at its second step ...
  probabilities[1 * CLASSES + ALPHABET.indexOf('7') + 1] = 0.03; // ... where a 7 is the runner-up
  const [one, two] = decodeCtc(probabilities, 4, CLASSES).digitDistributions;
  t.equal(one!.length, 10);
  t.equal(one![1]!.toFixed(2), '0.95');
  t.equal(one![7]!.toFixed(2), '0.03');
  t.equal(two![2]!.toFixed(2), '0.90');
});

t.test('layout decoding: the best path whose text has the wheels of a trained layout', async (t) => {
  // The model's own best path reads six digits, the sixth weakly: in the 5-wheel layout it goes.
  const six = steps('0-0-1-9-3-1', 0.9);
  six[10 * CLASSES + 2] = 0.5;
  six[10 * CLASSES + 0] = 0.45;
  t.equal(decodeCtc(six, 11, CLASSES).text, '001931');
  t.equal(decodeInLayout(six, 11, CLASSES, 'ddddd').text, '00193');
  const read = readInLayouts(six, 11, CLASSES);
  t.equal(read.text, '00193');
  t.ok(Math.abs(read.layoutFit - 0.45 / 0.5) < 1e-6, 'the fit is what dropping the digit cost');
});

t.test(
  'layout decoding keeps a repeated digit apart only across a blank, and picks 5 + 3 when the point is read',
  async (t) => {
    const path = '0-0-7-5-8-.-4-0-7';
    const read = readInLayouts(steps(path), path.length, CLASSES);
    t.equal(read.text, '00758.407');
    t.equal(read.layoutFit, 1);
    t.same(read.digitProbabilities.length, 8);
    t.equal(
      decodeInLayout(steps('00000'), 5, CLASSES, 'ddddd').text.length,
      5,
      'forced to five wheels even from one run',
    );
  },
);

function closeTo(t: { ok(value: boolean, message: string): void }) {
  return (actual: number[], expected: number[]) =>
    t.ok(
      actual.every((p, i) => Math.abs(p - expected[i]!) < 1e-9) && actual.length === expected.length,
      `${actual} ≈ ${expected}`,
    );
}

/** A reader's reading that gave each digit it read probability p and none to the other digits. */
function read(text: string, digitProbabilities: number[], pointProbability?: number, layoutFit = 1): LayoutReading {
  const digits = [...text.replaceAll('.', '')].map(Number);
  const digitDistributions = digits.map((digit, wheel) =>
    Array.from({ length: 10 }, (_, d) => (d === digit ? digitProbabilities[wheel]! : 0)),
  );
  return { text, digitProbabilities, digitDistributions, pointProbability, layoutFit };
}

t.test(
  'several readers: wheel by wheel, the digit with the most probability behind it, as sure as all readers together',
  async (t) => {
    const close = closeTo(t);

    const alone = read('00758.407', [0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6], 0.95, 0.8);
    t.same(combineReadings([alone]), alone, 'one reader: its reading as it is');

    const combined = combineReadings([
      read('00758.407', Array(8).fill(0.9), 0.9),
      read('00758.401', [...Array(7).fill(0.9), 0.6], 0.9),
      read('00758.401', [...Array(7).fill(0.9), 0.2], 0.6),
    ]);
    t.equal(
      combined.text,
      '00758.407',
      'one sure reader outweighs two unsure ones on the last wheel (0.9 > 0.6 + 0.2)',
    );
    close(combined.digitProbabilities, [...Array(7).fill(0.9), 0.3]);
    close([combined.pointProbability!], [0.8]);

    const runnerUp = read('00758.401', Array(8).fill(0.5));
    runnerUp.digitDistributions[7]![7] = 0.45;
    const soft = combineReadings([runnerUp, read('00758.407', [...Array(7).fill(0.5), 0.4])]);
    t.equal(soft.text, '00758.407', 'what a reader gave the digits it did not read counts too (0.45 + 0.4 > 0.5)');
    close([soft.digitProbabilities[7]!], [0.425]);

    const layouts = combineReadings([
      read('01348', Array(5).fill(1)),
      read('01348', Array(5).fill(1)),
      read('01348.000', Array(8).fill(1), 1, 0.5),
    ]);
    t.equal(layouts.text, '01348', 'the layout most readers chose');
    close(layouts.digitProbabilities, Array(5).fill(2 / 3));
    t.equal(layouts.pointProbability, undefined);
    t.equal(layouts.layoutFit, 1, 'the fit of the readers that chose the layout');
  },
);

t.test(
  'the layout most readers chose, the first read on a tie: the one the wheel reader is asked to vote on',
  async (t) => {
    const [five, eight, otherFive] = [
      read('01348', Array(5).fill(1)),
      read('01348.000', Array(8).fill(1)),
      read('01349', Array(5).fill(1)),
    ];
    t.same(mostChosenLayout([eight, five, otherFive]), ['ddddd', [five, otherFive]], 'two of three');
    t.same(mostChosenLayout([eight, five]), ['ddddd.ddd', [eight]], 'a tie: the first read');
  },
);

t.test(
  'the wheel reader votes on the digits as WHEEL_READER_WEIGHT strip readers, when the layout has as many wheels',
  async (t) => {
    const close = closeTo(t);
    const { wholeUnits, fractional } = WHEEL_READER_WEIGHT;
    const wheels = (digits: string, p: number) =>
      [...digits].map((digit) => Array.from({ length: 10 }, (_, d) => (d === Number(digit) ? p : (1 - p) / 9)));
    const readers = [read('00758.401', Array(8).fill(0.8), 0.9), read('00758.407', Array(8).fill(0.6), 0.7)];
    const combined = combineReadings(readers, wheels('00758407', 0.9));
    t.equal(combined.text, '00758.407', 'the 7 has 0.6 + weight x 0.9 behind it, the 1 has 0.8 + weight x 0.1 / 9');
    close(combined.digitProbabilities, [
      ...Array(5).fill((0.8 + 0.6 + wholeUnits * 0.9) / (2 + wholeUnits)),
      ...Array(2).fill((0.8 + 0.6 + fractional * 0.9) / (2 + fractional)),
      (0.6 + fractional * 0.9) / (2 + fractional),
    ]);
    close([combined.pointProbability!], [0.8]);
    t.equal(
      combined.pointProbability,
      combineReadings(readers).pointProbability,
      "the point is the strip readers' alone",
    );

    const sure = read('00758.401', Array(8).fill(0.9));
    const outvoted = combineReadings([sure, sure], wheels('00658407', 0.9));
    t.equal(
      outvoted.text,
      '00658.407',
      'as sure as two strip readers that agree, it outweighs them on whole-unit and fractional wheels alike',
    );
    const surer = read('00758.401', Array(8).fill(0.95));
    const held = combineReadings([sure, sure, surer], wheels('00658407', 0.9));
    t.equal(
      held.text,
      '00758.407',
      'three strip readers that agree, one surer than it, hold a whole-unit wheel; on a fractional wheel it outweighs them',
    );

    const fiveWheels = combineReadings([read('01348', Array(5).fill(0.9))], wheels('00758407', 0.9));
    t.equal(fiveWheels.text, '01348');
    close(fiveWheels.digitProbabilities, Array(5).fill(0.9));
  },
);

t.test('format: whole-unit wheels, a decimal point, fractional wheels, as the dial shows them', async (t) => {
  const reading = formatReading(
    { text: '00758.407', digitProbabilities: Array(8).fill(0.99), pointProbability: 0.98, layoutFit: 1 },
    1,
  );
  t.equal(reading?.reading, '00758.407');
  t.equal(reading?.value, 758.407);
  t.equal(reading?.digitConfidences.length, 8);
  const whole = formatReading({ text: '01348', digitProbabilities: [0.99, 0.99, 0.99, 0.99, 0.99], layoutFit: 1 }, 1);
  t.same([whole?.reading, whole?.value], ['01348', 1348]);
});

t.test('confidence: every digit (and the point) right, times the orientation and layout beliefs', async (t) => {
  const digits = [1, 0.5, 1, 1, 0.8];
  const close = (actual: number | undefined, expected: number) =>
    t.ok(Math.abs(actual! - expected) < 1e-9, `${actual} ≈ ${expected}`);
  close(formatReading({ text: '00123', digitProbabilities: digits, layoutFit: 1 }, 1)?.confidence, 40);
  close(formatReading({ text: '00123', digitProbabilities: Array(5).fill(1), layoutFit: 1 }, 0.5)?.confidence, 50);
  close(formatReading({ text: '00123', digitProbabilities: Array(5).fill(1), layoutFit: 0.25 }, 1)?.confidence, 25);
  const weakPoint = formatReading(
    { text: '00123.456', digitProbabilities: Array(8).fill(1), pointProbability: 0.3, layoutFit: 1 },
    1,
  );
  close(weakPoint?.confidence, 30);
  t.same(
    formatReading({ text: '00123', digitProbabilities: digits, layoutFit: 1 }, 1)?.digitConfidences,
    [100, 50, 100, 100, 80],
  );
});

t.test('text that is not a number is refused', async (t) => {
  t.equal(formatReading({ text: '00.1.2', digitProbabilities: Array(4).fill(1), layoutFit: 1 }, 1), undefined);
  t.equal(formatReading({ text: '', digitProbabilities: [], layoutFit: 1 }, 1), undefined);
});

/** A strip whose wheels each show their digit with probability `sure`, except where `split` spreads a wheel. */
function wheels(text: string, split: Record<number, Record<number, number>> = {}, sure = 0.9): LayoutReading {
  const digits = [...text.replaceAll('.', '')].map(Number);
  const digitDistributions = digits.map((digit, wheel) =>
    Array.from({ length: 10 }, (_, d) => split[wheel]?.[d] ?? (split[wheel] ? 0 : d === digit ? sure : (1 - sure) / 9)),
  );
  return {
    text,
    digitProbabilities: digitDistributions.map((distribution, i) => distribution[digits[i]!]!),
    digitDistributions,
    layoutFit: 1,
  };
}

t.test('window decode: the free reading when it lies in the window', async (t) => {
  const strip = wheels('00758.407');
  const within = readWithinValues(strip, { min: 700, max: 760 })!;
  t.equal(within.text, '00758.407');
  t.same(within.digitProbabilities, strip.digitProbabilities);
});

t.test('window decode: a rolling wheel takes the neighbouring digit the window allows', async (t) => {
  // The units wheel is read as 0 or 6, the 0 a little more probable: 600.494 is below the window.
  const strip = wheels('00600.494', { 4: { 0: 0.55, 6: 0.4, 8: 0.05 } });
  const within = readWithinValues(strip, { min: 605.9, max: 660 })!;
  t.equal(within.text, '00606.494');
  t.equal(readWithinValues(strip, { min: 599, max: 700 })!.text, '00600.494');
  t.ok(Math.abs(within.digitProbabilities[4]! - 0.4) < 1e-9, 'the wheel is as sure as its chosen digit');
});

t.test('window decode: a 9 → 0 carry turns every wheel it runs through', async (t) => {
  // 00123.999 rolling to 00124.000: each fractional wheel between 9 and 0, the units wheel between 3 and 4.
  const rolling = { 0: 0.3, 9: 0.7 };
  const strip = wheels('00123.999', { 4: { 3: 0.6, 4: 0.4 }, 5: rolling, 6: rolling, 7: rolling });
  t.equal(
    readWithinValues(strip, { min: 123.5, max: 200 })!.text,
    '00123.999',
    'the lower side when the window allows it',
  );
  t.equal(
    readWithinValues(strip, { min: 124, max: 200 })!.text,
    '00124.000',
    'the carried side when only it is inside',
  );
  const rolledBack = { 0: 0.7, 9: 0.3 };
  const carried = wheels('00124.000', { 4: { 4: 0.6, 3: 0.4 }, 5: rolledBack, 6: rolledBack, 7: rolledBack });
  t.equal(readWithinValues(carried, { min: 100, max: 123.9995 })!.text, '00123.999', 'and back: the wheels still at 9');
});

t.test(
  'window decode: a window that excludes the free reading gets the best reading inside it, however improbable',
  async (t) => {
    const strip = wheels('00379');
    const within = readWithinValues(strip, { min: 37.9, max: 97.9 })!;
    t.equal(within.text, '00079');
    t.ok(within.digitProbabilities[2]! < 0.02, 'the changed wheel is improbable');
    t.equal(
      readWithinValues(wheels('99999'), { min: 100000, max: 100060 }),
      undefined,
      'no reading of five wheels lies there',
    );
  },
);

t.test('window decode: both ends bound every wheel, in units of the last wheel', async (t) => {
  const favoured: Array<Record<number, number>> = [{ 9: 0.5, 7: 0.2 }, { 0: 0.2 }, { 0: 0.2 }];
  const tables = favoured.map((digits) => Array.from({ length: 10 }, (_, digit) => digits[digit] ?? 0.05));
  t.same(mostProbableInRange(tables, { low: 250, high: 730 })!.digits, [7, 0, 0]);
  t.same(mostProbableInRange(tables, { low: 250, high: 999 })!.digits, [9, 0, 0]);
  t.same(mostProbableInRange(tables, { low: 901, high: 901 })!.digits, [9, 0, 1]);
  t.equal(mostProbableInRange(tables, { low: 730, high: 250 }), undefined);
  t.ok(Math.abs(mostProbableInRange(tables, { low: 0, high: 999 })!.probability - 0.5 * 0.2 * 0.2) < 1e-12);
});
