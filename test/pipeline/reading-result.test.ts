import t from 'tap';
import { readingResult } from '../../src/pipeline/reading-result.ts';

const base = {
  readingId: '42',
  reading: '02390.276',
  value: '2390.276',
  confidence: 97,
  escalated: false,
  model: 'm',
  digitConfidences: null,
  counterBox: null,
  wholeUnitsAgreed: true,
};
const frame = { width: 800, height: 600 };
const judgement = { meterId: null, plausibility: undefined, needsReview: false };

t.test('the reading fields, with numbers as numbers', async (t) => {
  t.same(readingResult(base, null, judgement), {
    reading: '02390.276',
    value: 2390.276,
    confidence: 97,
    escalated: false,
    model: 'm',
    reading_id: 42,
    meter_id: null,
    needs_review: false,
    whole_units_agreed: true,
  });
});

t.test('digits: one per wheel, only when the reader gave one confidence per wheel', async (t) => {
  const confidences = [90, 91, 92, 93, 94, 95, 96, 97];
  t.same(
    readingResult({ ...base, digitConfidences: confidences }, null, judgement).digits,
    [0, 2, 3, 9, 0, 2, 7, 6].map((digit, wheel) => ({ digit, confidence: confidences[wheel] })),
  );
  t.notOk(
    'digits' in readingResult({ ...base, digitConfidences: [90, 91] }, null, judgement),
    'a count that does not match the wheels is left out',
  );
  t.notOk('digits' in readingResult(base, null, judgement));
});

t.test('counter_box: the corners with the size of the image they are in', async (t) => {
  const corners: Array<[number, number]> = [
    [1, 2],
    [3, 4],
    [5, 6],
    [7, 8],
  ];
  t.same(readingResult({ ...base, counterBox: corners }, frame, judgement).counter_box, {
    corners,
    image_width: 800,
    image_height: 600,
  });
  t.notOk('counter_box' in readingResult(base, frame, judgement));
  t.notOk('counter_box' in readingResult({ ...base, counterBox: corners }, null, judgement), 'not without its frame');
});
