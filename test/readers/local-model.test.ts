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
  chooseCounter,
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
      formatted: formatted(reading, confidence),
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

/** A reading's text and confidence as the readers format it. */
function formatted(reading: string, confidence: number) {
  return { reading, value: Number(reading), confidence, digitConfidences: [] };
}

/** A window read as `reading`, with what each of its readers read. */
function windowRead(reading: string, readerTexts: string[], wheelReaderText: string) {
  return {
    formatted: formatted(reading, 37),
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
      formatted: formatted(reading, confidence),
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

/** A window's reading as the photo's windows are compared: its confidence and its wheels' probabilities. */
const wheelsRead = (reading: string, confidence: number, digitProbabilities: number[]) => ({
  formatted: formatted(reading, confidence),
  strip: { digitProbabilities },
});

t.test(
  'windows are weighed by their whole-unit wheels; a reading that does not read from 0, at a tenth of that',
  async (t) => {
    t.equal(choiceWeight(wheelsRead('01348', 80, [1, 1, 1, 1, 0.8])), 80);
    t.equal(
      choiceWeight(wheelsRead('00337.293', 18, [1, 1, 1, 1, 1, 0.5, 1, 1])),
      36,
      'the wheels past the point do not count',
    );
    t.equal(choiceWeight(wheelsRead('37294', 40, [1, 1, 1, 1, 0.4])), 4, 'print or wheels further along a counter');
    t.ok(
      choiceWeight(wheelsRead('00210', 74, [1, 1, 1, 1, 0.74])) >
        choiceWeight(wheelsRead('15771.560', 76, [1, 1, 1, 1, 1, 1, 1, 0.76])),
      'a counter read from 0 wins over print read more surely',
    );
    t.ok(
      choiceWeight(wheelsRead('00090.393', 14, [1, 1, 1, 0.99, 1, 0.83, 0.99, 0.26])) >
        choiceWeight(wheelsRead('00515', 15, [1, 0.81, 0.22, 0.89, 0.98])),
      'a 5 + 3 counter sure of its whole units wins over print that its turning last wheel would lose to',
    );
    t.ok(
      choiceWeight(wheelsRead('61815', 100, [1, 1, 1, 1, 1])) >
        choiceWeight(wheelsRead('00515', 9, [1, 0.81, 0.22, 0.5, 1])),
      'print does not lose to any guess',
    );
    t.equal(
      choiceWeight(wheelsRead('00337.293', 0, [1, 1, 1, 1, 1, 0, 1, 1])),
      0,
      'a wheel read at 0 weighs 0, not NaN',
    );
  },
);

t.test(
  'the counter is the window surest of its whole units; of the windows that read them, the surest of every wheel',
  async (t) => {
    const counter = wheelsRead('00250.367', 42, [1, 1, 1, 1, 1, 0.9, 0.8, 0.6]);
    const surerOfItsLastWheels = wheelsRead('00250.361', 50, [1, 1, 1, 1, 0.7, 1, 1, 0.8]);
    const print = wheelsRead('00515', 45, [1, 0.9, 0.5, 1, 1]);
    t.equal(chooseCounter([print, counter]), counter, 'the counter, though its last wheels make it less sure');
    t.equal(chooseCounter([print, counter, surerOfItsLastWheels]), surerOfItsLastWheels, 'the surest of its readings');
    t.equal(
      chooseCounter([print, counter, wheelsRead('00250', 60, [1, 1, 1, 1, 0.6])]),
      counter,
      'a reading in another layout is another reading: the layouts are weighed after',
    );
    t.equal(chooseCounter([{ ...print, formatted: undefined }]), undefined, 'no reading when none is a number');
  },
);
