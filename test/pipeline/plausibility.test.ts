import t from 'tap';
import { MIN_ELAPSED_HOURS, plausibilityWindow, UNDATED_ELAPSED_HOURS } from '../../src/pipeline/plausibility.ts';

const readAt = new Date('2026-11-01T00:00:00Z');
const hoursLater = (hours: number) => new Date(readAt.getTime() + hours * 3_600_000);

t.test('one step of the fastest wheel below the reference, max flow × elapsed hours above', async (t) => {
  t.same(plausibilityWindow({ reading: '00606.494', source: 'reading', readAt }, hoursLater(24), 2.5), { reference: '00606.494', min: 606.493, max: 666.494 });
  t.same(plausibilityWindow({ reading: '606.4', source: 'correction', readAt }, hoursLater(2), 1), { reference: '606.4', min: 606.3, max: 608.4 });
  t.same(
    plausibilityWindow({ reading: '606', source: 'previous_reading', readAt }, hoursLater(2), 1),
    { reference: '606', min: 605, max: 608 },
    'whole units: one unit',
  );
});

t.test('a floor of elapsed time, and undated references taken as a year old', async (t) => {
  t.equal(plausibilityWindow({ reading: '10.000', source: 'reading', readAt }, hoursLater(0.05), 2.5).max, 10 + 2.5 * MIN_ELAPSED_HOURS, 'three minutes later');
  t.equal(
    plausibilityWindow({ reading: '10.000', source: 'reading', readAt: hoursLater(5) }, readAt, 2.5).max,
    10 + 2.5 * MIN_ELAPSED_HOURS,
    'a reference dated after the photo',
  );
  t.equal(plausibilityWindow({ reading: '10', source: 'previous_reading', readAt: null }, readAt, 1).max, 10 + UNDATED_ELAPSED_HOURS);
});
