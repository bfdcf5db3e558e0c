import t from 'tap';
import {
  billingError,
  digitMatches,
  isExact,
  isWholeUnitExact,
  isWithinOneOfLastDigit,
  percentile,
  sameReading,
  summarise,
  summariseReview,
  type ScoredCase,
} from '../../src/eval/metrics.ts';
import { DEFAULT_REVIEW_BELOW } from '../../src/plausibility-policy.ts';
import type { Plausibility } from '../../src/readers/reader.ts';

const scored = (accepted: string[], predicted: string | undefined, confidence = 90, latencyMs = 10): ScoredCase => ({
  file: `${accepted[0]}-${predicted}.jpg`,
  accepted,
  predicted,
  confidence,
  latencyMs,
});

t.test('readings compare as numbers, so labels may drop leading and trailing zeros', async (t) => {
  t.ok(sameReading('00454.000', '454.0'));
  t.ok(sameReading('00000.700', '0.7'));
  t.ok(sameReading('01348', '1348'));
  t.notOk(sameReading('00454.001', '454.0'));
});

t.test('a reading matching any alternative is exact', async (t) => {
  t.ok(isExact(scored(['00720', '00721'], '00721')));
  t.notOk(isExact(scored(['00720', '00721'], '00722')));
  t.notOk(isExact(scored(['00720'], undefined)));
});

t.test('last digit within one unit of the finer reading, across a carry', async (t) => {
  t.ok(isWithinOneOfLastDigit(scored(['758.407'], '00758.408')));
  t.ok(isWithinOneOfLastDigit(scored(['99.999'], '00100.000')));
  t.notOk(isWithinOneOfLastDigit(scored(['758.407'], '00758.409')));
  t.ok(isWithinOneOfLastDigit(scored(['454.0'], '00453.999')), 'a dropped trailing zero does not widen the tolerance');
  t.notOk(isWithinOneOfLastDigit(scored(['454.0'], '00454.002')));
  t.ok(isWithinOneOfLastDigit(scored(['01348'], '01349')));
  t.notOk(isWithinOneOfLastDigit(scored(['01348'], undefined)));
});

t.test('whole units compare the integer part only', async (t) => {
  t.ok(isWholeUnitExact(scored(['13.116'], '00013.999')));
  t.notOk(isWholeUnitExact(scored(['13.116'], '00014.116')));
});

t.test('digits align at the decimal point, padded with the zeros either side dropped', async (t) => {
  t.same(digitMatches(scored(['13.116'], '00013.116')), { matched: 8, total: 8 });
  t.same(digitMatches(scored(['13.1'], '00018.100')), { matched: 7, total: 8 });
  t.same(digitMatches(scored(['00720', '00721'], '00821')), { matched: 4, total: 5 }, 'best alternative');
  t.same(digitMatches(scored(['01348'], undefined)), { matched: 0, total: 5 });
});

t.test('summary: rates, selective accuracy by confidence, latency percentiles, confident misreads first', async (t) => {
  const cases = [
    scored(['1.0'], '00001.000', 99, 10),
    scored(['2.0'], '00002.000', 85, 20),
    scored(['3.0'], '00003.001', 95, 30),
    scored(['4.0'], '00005.000', 40, 40),
    { ...scored(['5.0'], undefined, 0, 50), error: 'unreadable: no counter' },
  ];
  const summary = summarise(cases, 2);
  t.equal(summary.photos, 5);
  t.equal(summary.exact, 0.4);
  t.equal(summary.lastDigitWithinOne, 0.6);
  t.equal(summary.wholeUnitExact, 0.6);
  t.same(summary.selective, [
    { threshold: 50, coverage: 0.6, accuracy: 2 / 3 },
    { threshold: 80, coverage: 0.6, accuracy: 2 / 3 },
    { threshold: 90, coverage: 0.4, accuracy: 0.5 },
    { threshold: 95, coverage: 0.4, accuracy: 0.5 },
  ]);
  t.same(summary.latencyMs, { p50: 30, p95: 50 });
  t.same(
    summary.worst.map((c) => c.accepted[0]),
    ['3.0', '4.0'],
  );
});

/** Readings at 100, 92, 90 (wrong), 89 and 0, and a photo with no reading. */
const binnedCases = [
  scored(['1.0'], '00001.000', 100),
  scored(['2.0'], '00002.000', 92),
  scored(['3.0'], '00003.001', 90),
  scored(['4.0'], '00004.000', 89),
  scored(['5.0'], '00005.000', 0),
  { ...scored(['6.0'], undefined, 0), error: 'unreadable: no counter' },
];

t.test(
  'reliability table: confidence bins of ten against the exact share of their readings; no reading is no bin',
  async (t) => {
    const reliability = summarise(binnedCases).reliability;
    t.equal(reliability.length, 10);
    t.same(reliability[9], { from: 90, to: 100, readings: 3, meanConfidence: 94, accuracy: 2 / 3 });
    t.same(reliability[8], { from: 80, to: 90, readings: 1, meanConfidence: 89, accuracy: 1 });
    t.same(reliability[0], { from: 0, to: 10, readings: 1, meanConfidence: 0, accuracy: 1 });
    t.same(reliability[5], { from: 50, to: 60, readings: 0, meanConfidence: null, accuracy: null });
  },
);

t.test(
  "calibration scores: Brier over the readings made, and the bins' gaps between confidence and accuracy",
  async (t) => {
    const { brier, expectedError } = summarise(binnedCases).calibration;
    t.ok(Math.abs(brier! - (0 + 0.08 ** 2 + 0.9 ** 2 + 0.11 ** 2 + 1) / 5) < 1e-12, `Brier ${brier}`);
    // 90–100: 3 at 94 against 66.7% right; 80–90: 1 at 89 against 100%; 0–10: 1 at 0 against 100%.
    t.ok(Math.abs(expectedError! - (3 * (94 - 200 / 3) + 11 + 100) / 5) < 1e-9, `expected error ${expectedError}`);
    t.same(summarise([binnedCases[5]!]).calibration, { brier: null, expectedError: null });
  },
);

t.test('selective accuracy is null where no reading is that confident', async (t) => {
  t.equal(summarise([scored(['1'], '00001', 10)]).selective[3]!.accuracy, null);
  t.equal(summarise([]).exact, 0);
});

t.test('nearest-rank percentiles', async (t) => {
  t.equal(percentile([], 50), 0);
  t.equal(percentile([5], 95), 5);
  t.equal(percentile([1, 2, 3, 4], 50), 2);
  t.equal(percentile([1, 2, 3, 4], 95), 4);
});

t.test(
  'billing errors: a consumption off by more than 1 m³ and 10% of the true one, among readings not needing review',
  async (t) => {
    const billed = (
      accepted: string[],
      predicted: string | undefined,
      reference: string,
      confidence = 100,
      plausibility: Plausibility = 'ok',
    ): ScoredCase => ({
      ...scored(accepted, predicted, confidence),
      plausibility,
      past: { reference },
    });
    t.same(billingError(billed(['37.902'], '00379', '00024.807')), {
      file: '37.902-00379.jpg',
      reading: '00379',
      reference: '00024.807',
      billed: 354.193,
      truly: 13.095,
    });
    t.equal(
      billingError(billed(['37.902'], '00038.902', '00024.807')),
      undefined,
      'a units wheel mid-roll: off by 1 m³',
    );
    t.same(
      billingError(billed(['37.902'], '00039.902', '00024.807'))?.billed,
      15.095,
      'two units off 13 m³: more than 1 m³ and 10%',
    );
    t.equal(billingError(billed(['137.902'], '00139.902', '00024.807')), undefined, 'two units off 113 m³: within 10%');
    t.equal(
      billingError(billed(['00720', '00722'], '00723', '00700')),
      undefined,
      'the closest accepted label is the truth',
    );
    t.equal(billingError(scored(['37.902'], '00379')), undefined, 'no past, nothing billed');

    const review = summariseReview([
      billed(['37.902'], '00379', '00024.807'),
      billed(['37.902'], '00037.902', '00024.807'),
      billed(['37.902'], '00037.000', '00024.807', 50),
      billed(['37.902'], '00037.902', '00024.807', 20, 'implausible'),
      billed(['37.902'], '00379', '00024.807', 5),
      billed(['37.902'], undefined, '00024.807', 0),
    ]);
    t.match(review, {
      reviewBelow: DEFAULT_REVIEW_BELOW,
      needsReview: 4 / 6,
      reasons: { noReading: 1 / 6, implausible: 1 / 6, suspicious: 0, lessConfident: 2 / 6 },
      rightInWholeUnits: { implausible: 1 / 6, suspicious: 0, lessConfident: 1 / 6 },
      billable: 2,
      wholeUnitsRightBillable: 1 / 2,
      billingErrors: [
        { file: '37.902-00379.jpg', reading: '00379', reference: '00024.807', billed: 354.193, truly: 13.095 },
      ],
      agreedBelow: { readings: 0, wholeUnitsRight: null },
    });
    const at = (reviewBelow: number) => review.byThreshold.find((judged) => judged.reviewBelow === reviewBelow);
    t.same(
      at(0),
      { reviewBelow: 0, needsReview: 2 / 6, billable: 4, wholeUnitsRightBillable: 2 / 4, billingErrors: 2 },
      'below 0: only no reading and flagged',
    );
    t.same(at(10), {
      reviewBelow: 10,
      needsReview: 3 / 6,
      billable: 3,
      wholeUnitsRightBillable: 2 / 3,
      billingErrors: 1,
    });
    t.same(at(95), {
      reviewBelow: 95,
      needsReview: 4 / 6,
      billable: 2,
      wholeUnitsRightBillable: 1 / 2,
      billingErrors: 1,
    });
    t.notOk(summarise([scored(['1'], '1')]).review, 'no grown past: no review summary');
    t.ok(summarise([billed(['1'], '1', '0')]).review);
  },
);

t.test('whole units agreed: a reading below the threshold needs no review, and the summary counts it', async (t) => {
  const read = (predicted: string, confidence: number, wholeUnitsAgreed: boolean): ScoredCase => ({
    ...scored(['37.902'], predicted, confidence),
    plausibility: 'ok',
    wholeUnitsAgreed,
    past: { reference: '00024.807' },
  });
  const review = summariseReview([
    read('00037.000', 50, true),
    read('00038.902', 40, true),
    read('00037.000', 50, false),
    read('00037.902', 99, true),
  ]);
  t.match(review, {
    needsReview: 1 / 4,
    reasons: { lessConfident: 1 / 4 },
    billable: 3,
    agreedBelow: { readings: 2, wholeUnitsRight: 1 / 2 },
  });
});
