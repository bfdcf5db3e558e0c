import t from 'tap';
import { createDatabase } from '../../src/db/database.ts';
import {
  meterExpectation,
  plausibilityWindow,
  readContext,
  type MeterReference,
} from '../../src/pipeline/expect-reading.ts';
import { MIN_ELAPSED_HOURS, UNDATED_ELAPSED_HOURS } from '../../src/plausibility-policy.ts';
import { judgeReading } from '../../src/readers/judge-reading.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { seedReadings } from '../helpers/seed-readings.ts';
import { createCustomer } from '../helpers/service.ts';

const readAt = new Date('2026-11-01T00:00:00Z');
const hoursLater = (hours: number) => new Date(readAt.getTime() + hours * 3_600_000);

t.test('one step of the fastest wheel below the reference, max flow × elapsed hours above', async (t) => {
  t.same(plausibilityWindow({ reading: '00606.494', source: 'reading', readAt }, hoursLater(24), 2.5), {
    reference: '00606.494',
    min: 606.493,
    max: 666.494,
  });
  t.same(plausibilityWindow({ reading: '606.4', source: 'correction', readAt }, hoursLater(2), 1), {
    reference: '606.4',
    min: 606.3,
    max: 608.4,
  });
  t.same(
    plausibilityWindow({ reading: '606', source: 'previous_reading', readAt }, hoursLater(2), 1),
    { reference: '606', min: 605, max: 608 },
    'whole units: one unit',
  );
});

t.test('a floor of elapsed time, and undated references taken as a month old', async (t) => {
  t.equal(
    plausibilityWindow({ reading: '10.000', source: 'reading', readAt }, hoursLater(0.05), 2.5).max,
    10 + 2.5 * MIN_ELAPSED_HOURS,
    'three minutes later',
  );
  t.equal(
    plausibilityWindow({ reading: '10.000', source: 'reading', readAt: hoursLater(5) }, readAt, 2.5).max,
    10 + 2.5 * MIN_ELAPSED_HOURS,
    'a reference dated after the photo',
  );
  t.equal(
    plausibilityWindow({ reading: '10', source: 'previous_reading', readAt: null }, readAt, 1).max,
    10 + UNDATED_ELAPSED_HOURS,
  );
});

t.test(
  "the issue's misread against the meter's layout: the reference's three red wheels say 00379 is not this counter's",
  async (t) => {
    const previous: MeterReference = {
      reading: '00024.807',
      source: 'previous_reading',
      readAt: hoursLater(-30 * 24),
      submissionId: null,
      referenceId: null,
    };
    const expected = meterExpectation({ previous, history: [], takenAt: readAt, maxFlow: 2.5, usualPerDay: 1.5 });
    t.same(expected.layout, { whole: 5, fraction: 3, shownBy: '00024.807' });
    t.equal(
      expected.window!.usualMax,
      expected.usual!.max,
      'the readers are given the usual window with the physical one (their rivals above it are none)',
    );
    t.equal(expected.usual!.max, 24.807 + 3 * 1.5 * 30 + 1);
    const misread = judgeReading(
      { reading: '00379', value: 379, confidence: 100, model: 'm', raw: null },
      expected.window,
      expected.layout,
    );
    t.match(misread, {
      plausibility: 'implausible',
      confidence: 20,
      plausibilityReason: /00379 has 5 whole and 0 fractional wheels; the meter has 5 and 3/,
    });
    t.equal(
      judgeReading(
        { reading: '00037.902', value: 37.902, confidence: 100, model: 'm', raw: null },
        expected.window,
        expected.layout,
      ).plausibility,
      'ok',
    );
  },
);

t.test(
  "the meter's layout: its setting, else the first of its reference and trusted values (newest first) written with leading zeros",
  async (t) => {
    const value = (reading: string, days: number): MeterReference => ({
      reading,
      source: 'reading',
      readAt: hoursLater(-days * 24),
      submissionId: '1',
      referenceId: 'r',
    });
    const history = [value('2390.5', 10), value('02380.100', 40), value('02370', 70)];
    const facts = { history, takenAt: readAt, maxFlow: 2.5, usualPerDay: 1.5 };
    t.same(
      meterExpectation(facts).layout,
      { whole: 5, fraction: 3, shownBy: '02380.100' },
      'one without zeros shows none',
    );
    t.same(
      meterExpectation({ ...facts, previous: { ...value('01000', 5), source: 'previous_reading' } }).layout?.shownBy,
      '01000',
      "the submission's own previous_reading first",
    );
    t.same(
      meterExpectation({ ...facts, layoutSet: { whole: 6, fraction: 2 } }).layout,
      { whole: 6, fraction: 2 },
      'a setting above all',
    );
    t.same(
      meterExpectation({ ...facts, history: [] }),
      { layout: undefined },
      'nothing known: no reference, no window, no layout',
    );
    t.same(
      meterExpectation({ ...facts, history: [], layoutSet: { whole: 5, fraction: 3 } }),
      { layout: { whole: 5, fraction: 3 } },
      'a setting before any reading',
    );
  },
);

t.test(
  'a meter read every 20 minutes: its usual is learned from its days before the photo, not from its last 100 readings',
  async (t) => {
    const database = await createTestDatabase();
    t.teardown(database.drop);
    const db = createDatabase(database.url);
    t.teardown(() => db.destroy());
    const customer = await createCustomer(db);
    const everyMinutes = 20;
    const perDay = (day: number) => (day < 30 ? 0.4 : 1.2);
    let value = 100;
    const readings = Array.from({ length: (60 * 24 * 60) / everyMinutes + 1 }, (_, i) => {
      const day = (i * everyMinutes) / (24 * 60);
      if (i > 0) value += (perDay(day) * everyMinutes) / (24 * 60);
      return {
        meterId: 'camera-1',
        createdAt: new Date(readAt.getTime() + day * 86_400_000),
        reading: value.toFixed(3).padStart(9, '0'),
        plausibility: 'ok' as const,
      };
    });
    const referenceIds = await seedReadings(db, customer, readings);
    const contextOf = async (index: number) => {
      const { id } = await db
        .selectFrom('submissions')
        .select('id')
        .where('reference_id', '=', referenceIds[index]!)
        .executeTakeFirstOrThrow();
      return readContext(db, id);
    };
    const newest = await contextOf(readings.length - 1);
    t.equal(newest.reference?.reading, readings.at(-2)!.reading, 'the reference is still the newest value before it');
    t.equal(newest.usual?.basis, 'history');
    t.ok(Math.abs(newest.usual!.perDay - 1.2) < 0.02, `about 1.2 m³ a day lately (${newest.usual?.perDay})`);
    const halfWay = await contextOf((readings.length - 1) / 2);
    t.ok(Math.abs(halfWay.usual!.perDay - 0.4) < 0.02, `about 0.4 m³ a day before day 30 (${halfWay.usual?.perDay})`);
  },
);
