import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { IMPLAUSIBLE_BELOW_WINDOW_FIT } from '../../src/plausibility-policy.ts';
import {
  distinctFiles,
  holdsFiveWheels,
  judgeWithinWindow,
  choiceWeight,
  rivalsInsideWindow,
  weighLayouts,
  wholeUnitsAgreed,
} from '../../src/readers/local/model.ts';
import { MIN_LOCAL_CONFIDENCE } from '../../src/readers/local/spec.ts';

t.test('one network in two slots is loaded once: files with the same bytes count once', async (t) => {
  const folder = await mkdtemp(path.join(tmpdir(), 'meterlens-models-'));
  await writeFile(path.join(folder, 'a.onnx'), 'one network');
  await writeFile(path.join(folder, 'b.onnx'), 'one network');
  await writeFile(path.join(folder, 'c.onnx'), 'another network');
  t.same(distinctFiles(folder, ['a.onnx', 'b.onnx', 'c.onnx']), ['a.onnx', 'c.onnx']);
  t.same(distinctFiles(folder, ['b.onnx', 'a.onnx']), ['b.onnx'], 'the first of them, in slot order');
});

t.test(
  'the verdict: ok inside the window; outside, corrected unless the best reading inside is too improbable or below the reading floor',
  async (t) => {
    const candidate = (reading: string, confidence: number) => ({
      formatted: { reading, value: Number(reading), confidence, digitConfidences: [] },
    });
    const window = { reference: '00600.000', min: 599.99, max: 660 };
    const free = candidate('00606.494', 40);
    const notNeeded = () => {
      t.fail('the window decode is not needed');
      return undefined;
    };
    t.same(judgeWithinWindow(free, window, notNeeded), { plausibility: 'ok', chosen: free });

    const below = candidate('00500.494', 40);
    const likely = candidate('00606.494', 40 * IMPLAUSIBLE_BELOW_WINDOW_FIT);
    t.same(
      judgeWithinWindow(below, window, () => likely),
      { plausibility: 'corrected', chosen: likely, windowFit: IMPLAUSIBLE_BELOW_WINDOW_FIT },
    );

    const unlikely = candidate('00606.494', 2);
    t.match(
      judgeWithinWindow(below, window, () => unlikely),
      {
        plausibility: 'implausible',
        chosen: below,
        windowFit: 0.05,
        reason:
          '00500.494 is below the reference reading 00600.000 (meters do not run backwards); the most probable reading inside the window, 00606.494, is 20 times less probable',
      },
    );
    const faintBelow = candidate('00500.494', 4);
    const faintInside = candidate('00606.494', MIN_LOCAL_CONFIDENCE);
    t.match(
      judgeWithinWindow(faintBelow, window, () => faintInside),
      { plausibility: 'corrected', chosen: faintInside },
      'at the floor, a reading',
    );
    t.match(
      judgeWithinWindow(faintBelow, window, () => candidate('00606.494', MIN_LOCAL_CONFIDENCE - 1)),
      {
        plausibility: 'implausible',
        chosen: faintBelow,
        windowFit: (MIN_LOCAL_CONFIDENCE - 1) / 4,
        reason: `00500.494 is below the reference reading 00600.000 (meters do not run backwards); the most probable reading inside the window, 00606.494, has a confidence product of ${MIN_LOCAL_CONFIDENCE - 1}, too low to be a reading`,
      },
      'below the floor the reader would call no reading, nothing inside is probable however well it fits',
    );
    t.match(
      judgeWithinWindow(candidate('99999', 90), { reference: '00100', min: 99.99, max: 160 }, () => undefined),
      {
        plausibility: 'implausible',
        windowFit: 0,
        reason: /^99999 is more than the meter can have run since the reference reading 00100 \(at most 160 m³\)$/,
      },
    );
  },
);

/** A window read as `reading`, with what each of its readers read. */
function windowRead(reading: string, readerTexts: string[], wheelReaderText: string) {
  return {
    formatted: { reading, value: Number(reading), confidence: 37, digitConfidences: [] },
    raw: { readerTexts, wheelReaderText, layoutFit: 1, upsideDown: [0, 1], orientationProbability: 1 },
  };
}

t.test("rivals inside the window: the window's own readers that read other whole units there", async (t) => {
  const window = { reference: '00230.000', min: 229.999, max: 290 };
  const chosen = (readerTexts: string[], wheelReaderText = '00238245') =>
    windowRead('00238.245', readerTexts, wheelReaderText);
  t.same(
    rivalsInsideWindow(chosen(['00238.245', '00238.245', '00238.241']), window),
    [],
    'all read 238: other litres are no rival',
  );
  t.same(
    rivalsInsideWindow(chosen(['00238.245', '00236.245', '00236.245']), window),
    ['00236.245'],
    'a strip reader reads 236, inside the window',
  );
  t.same(
    rivalsInsideWindow(chosen(['00238.245', '00238.245', '00238.245'], '00236245'), window),
    ['00236.245'],
    "the wheel reader's wheels, in the reading's layout",
  );
  t.same(
    rivalsInsideWindow(chosen(['00238.245', '05238.245', '00038'], '0023824'), window),
    [],
    'readings outside the window, and a wheel reader that read other wheels, are no rivals',
  );
  const usual = { ...window, usualMax: 250 };
  t.same(
    rivalsInsideWindow(chosen(['00238.245', '00288.245', '00236.245']), usual),
    ['00236.245'],
    "a reading above the meter's usual consumption (it would be suspicious) is no rival; one within it is",
  );
});

t.test(
  "whole units agreed: a counter with fractional wheels whose window's readers all read its whole units",
  async (t) => {
    t.ok(
      wholeUnitsAgreed(windowRead('00238.245', ['00238.245', '00238.745', '00238.241'], '00238249')),
      'all four read 238; the litres differ',
    );
    t.notOk(
      wholeUnitsAgreed(windowRead('00238.245', ['00238.245', '00239.245', '00238.245'], '00238245')),
      'one reads 239',
    );
    t.notOk(
      wholeUnitsAgreed(windowRead('00238.245', ['00238.245', '00238.245', '00238.245'], '00236245')),
      'the wheel reader reads 236',
    );
    t.notOk(
      wholeUnitsAgreed(windowRead('00238.245', ['00238.245', '00238.245', '00238.245'], '0023824')),
      'without the wheel reader reading every wheel the strip readers alone do not agree it',
    );
    t.notOk(
      wholeUnitsAgreed(windowRead('00238.245', ['00238.245', '00238.245', '00238.245'], '')),
      'nor without a wheel reader (the default set has none)',
    );
    t.ok(
      wholeUnitsAgreed(windowRead('00238.245', ['00238.245', '00238', '00238.245'], '00238245')),
      'a reader that read the black wheels only reads the same whole units',
    );
    t.notOk(
      wholeUnitsAgreed(windowRead('00238.245', ['00238.245', '0023A', '00238.245'], '00238245')),
      'one that read no number does not agree',
    );
    t.notOk(
      wholeUnitsAgreed(windowRead('00238', ['00238', '00238', '00238'], '')),
      'whole units only: the last wheel is a unit, where agreeing readers can all be wrong',
    );
  },
);

t.test(
  'a counter read in both layouts: the surer reading, or a 5 + 3 one holding the five wheels at its own confidence',
  async (t) => {
    const read = (reading: string, confidence: number) => ({
      formatted: { reading, value: Number(reading), confidence, digitConfidences: [] },
      raw: { readerTexts: [reading], wheelReaderText: '', layoutFit: 1, upsideDown: [0, 1], orientationProbability: 1 },
    });
    const surerRival = weighLayouts(read('06735', 39), [read('00213.548', 67)]);
    t.equal(surerRival.formatted.reading, '00213.548', 'the surer reading');
    t.ok(
      Math.abs(surerRival.formatted.confidence - (67 * 67) / (67 + 39)) < 1e-9,
      'scaled by its share of the two confidences: they are rivals',
    );
    t.match(surerRival.raw, { otherLayout: { reading: '06735', confidence: 39 } }, 'the other layout is kept in raw');

    const sameWholeUnits = weighLayouts(read('00074', 69), [read('00074.176', 41)]);
    t.equal(
      sameWholeUnits.formatted.reading,
      '00074.176',
      'the same whole units, found surely enough: the 5 + 3 counter',
    );
    t.equal(sameWholeUnits.formatted.confidence, 41, 'at its own confidence: it reads the same wheels and more');
    const faceReadAsWheels = weighLayouts(read('00473', 99), [read('00473.000', 2)]);
    t.equal(
      faceReadAsWheels.formatted.reading,
      '00473',
      "the same whole units read barely: a five-wheel counter's face past its end",
    );
    t.ok(faceReadAsWheels.formatted.confidence > 97, 'and it keeps nearly all its confidence');
    t.equal(
      weighLayouts(read('30905', 93), [read('01309.052', 10)]).formatted.reading,
      '01309.052',
      'five wheels from further along the counter (a window cut across it), found surely enough: the 5 + 3 counter',
    );
    t.equal(
      weighLayouts(read('37294', 51), [read('00337.297', 39)]).formatted.reading,
      '00337.297',
      'and so where the two windows read its last, rolling wheel apart',
    );
    const rolledOn = { ...read('00075', 69), raw: { ...read('00075', 69).raw, rolledOn: true } };
    t.equal(
      weighLayouts(rolledOn, [read('00074.876', 41)]).formatted.confidence,
      41,
      "five wheels whose last the rolling rule read on hold the 5 + 3 counter's units wheel, which turns with its fractions",
    );
    t.equal(
      weighLayouts(read('00292', 68), [read('00700.292', 3.3)]).formatted.reading,
      '00292',
      "five wheels held further along a reading barely made: a five-wheel counter's face and frame round it",
    );
    t.equal(
      weighLayouts(read('04057', 16), [read('00405.178', 5.1), read('00405.178', 9.5), read('00040.817', 12)]).formatted
        .confidence,
      9.5,
      "of the counter's 5 + 3 readings, the surest that holds the five wheels",
    );
    const otherWholeUnits = weighLayouts(read('01796', 60), [read('00187.697', 11)]);
    t.equal(otherWholeUnits.formatted.reading, '01796', 'other whole units, less sure: the five wheels stand');
    t.ok(Math.abs(otherWholeUnits.formatted.confidence - (60 * 60) / 71) < 1e-9, 'less sure for the rival');
    t.equal(weighLayouts(read('01796', 60), []).formatted.confidence, 60, 'no 5 + 3 reading: the five wheels as read');
    t.equal(
      weighLayouts(read('01796', 0), [read('00187.697', 0)]).formatted.confidence,
      0,
      'two readings at 0 share nothing: 0, not NaN',
    );
  },
);

t.test('a 5 + 3 reading holds five wheels as its whole units, or further along but for one digit', async (t) => {
  t.ok(holdsFiveWheels('00074.176', '00074'), 'its whole units');
  t.notOk(holdsFiveWheels('00075.176', '00074'), 'other whole units are a rival reading');
  t.ok(holdsFiveWheels('01309.052', '30905'), 'two wheels further along');
  t.ok(holdsFiveWheels('00405.178', '04057'), 'a wheel further along, its last wheel read apart');
  t.notOk(holdsFiveWheels('00187.697', '01796'), 'two digits apart');
});

t.test(
  'a reading that does not read from 0 weighs a tenth of its confidence against the others; from 0, all of it',
  async (t) => {
    const formatted = (reading: string, confidence: number) => ({
      reading,
      value: Number(reading),
      confidence,
      digitConfidences: [],
    });
    t.equal(choiceWeight(formatted('00337.293', 36)), 36);
    t.equal(choiceWeight(formatted('01348', 80)), 80);
    t.equal(choiceWeight(formatted('37294', 40)), 4, 'print or wheels further along a counter, seldom a counter');
    t.ok(
      choiceWeight(formatted('00210', 74)) > choiceWeight(formatted('15771.560', 76)),
      'a counter read from 0 wins over print read more surely',
    );
    t.ok(choiceWeight(formatted('61815', 100)) > choiceWeight(formatted('00515', 9)), 'but not over any guess');
  },
);
