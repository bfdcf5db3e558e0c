import t from 'tap';
import {
  grownPast,
  MANUAL_INTERVAL_DAYS,
  MANUAL_READINGS,
  PAST_DAYS,
  PAST_RATE_M3_PER_DAY,
} from '../../src/eval/history.ts';
import { meterExpectation } from '../../src/pipeline/expect-reading.ts';
import { DEFAULT_MAX_FLOW, DEFAULT_USUAL_M3_PER_DAY } from '../../src/plausibility-policy.ts';

const DAY_MS = 86_400_000;
const photos = Array.from({ length: 40 }, (_, i) => ({
  file: `images/id_${i}.jpg`,
  accepted: [`${200 + i}.${String(i * 7).padStart(3, '0')}`],
}));

t.test(
  'dated: a previous_reading as the dial shows it, 20–40 days earlier, 0.1–0.8 m³ a day below the label',
  async (t) => {
    for (const photo of photos) {
      const past = grownPast(photo, 'dated');
      t.same(past.history, []);
      t.match(past, {
        maxFlow: DEFAULT_MAX_FLOW,
        usualPerDay: DEFAULT_USUAL_M3_PER_DAY,
        previous: { source: 'previous_reading' },
      });
      const { reading, readAt } = past.previous!;
      t.match(
        reading,
        /^00\d{3}\.\d{3}$/,
        `${reading}: five whole wheels (the trained 5 + 3) and the label's three red ones`,
      );
      const days = (past.takenAt.getTime() - readAt!.getTime()) / DAY_MS;
      t.ok(days >= PAST_DAYS.min && days <= PAST_DAYS.max, `${days} days`);
      const rate = (Number(photo.accepted[0]) - Number(reading)) / days;
      t.ok(rate >= PAST_RATE_M3_PER_DAY.min - 0.001 && rate <= PAST_RATE_M3_PER_DAY.max + 0.001, `${rate} m³ a day`);
    }
    t.same(grownPast(photos[0]!, 'dated'), grownPast(photos[0]!, 'dated'), 'the same past every run');
    t.not(grownPast(photos[0]!, 'dated').previous!.reading, grownPast(photos[1]!, 'dated').previous!.reading);
  },
);

t.test('a label too low for the drawn rate: the past starts at zero, a new meter', async (t) => {
  for (const label of ['00000', '00001', '0.5']) {
    const photo = { file: `low-${label}.jpg`, accepted: [label] };
    const dated = grownPast(photo, 'dated').previous!.reading;
    t.ok(Number(dated) >= 0 && Number(dated) <= Number(label), `${label}: ${dated}`);
    t.match(dated, label.includes('.') ? /^\d{5}\.\d{3}$/ : /^\d{5}$/, 'in the trained layout that holds the label');
    for (const value of grownPast(photo, 'manual').history) t.ok(Number(value.reading) >= 0);
  }
});

t.test(
  "a label that dropped its zeros (Toloka's 70.94 is 00070.940): the past in the trained layout that holds it",
  async (t) => {
    for (const label of ['70.94', '454.0', '3.7', '12345.6']) {
      const photo = { file: `dropped-${label}.jpg`, accepted: [label] };
      t.match(
        grownPast(photo, 'dated').previous!.reading,
        /^\d{5}\.\d{3}$/,
        `${label}: five whole and three red wheels`,
      );
      for (const value of grownPast(photo, 'manual').history) t.match(value.reading, /^\d{5}\.\d{3}$/);
      if (Number(label) < 10_000)
        t.match(
          meterExpectation(grownPast(photo, 'manual')).layout,
          { whole: 5, fraction: 3 },
          'its leading zeros show it',
        );
    }
    t.match(
      grownPast({ file: 'wide.jpg', accepted: ['123456.78'] }, 'dated').previous!.reading,
      /^\d{6}\.\d{2}$/,
      'a label no trained layout holds: as written',
    );
  },
);

t.test(
  'manual: readings a person entered about monthly, the last 20–40 days earlier; the usual consumption is their own',
  async (t) => {
    for (const photo of photos) {
      const past = grownPast(photo, 'manual');
      t.equal(past.previous, undefined, 'no reference fields');
      t.equal(past.history.length, MANUAL_READINGS);
      const times = past.history.map((value) => value.readAt!.getTime());
      const days = (past.takenAt.getTime() - times[0]!) / DAY_MS;
      t.ok(days >= PAST_DAYS.min && days <= PAST_DAYS.max);
      for (let i = 1; i < times.length; i++) {
        const interval = (times[i - 1]! - times[i]!) / DAY_MS;
        t.ok(
          interval >= MANUAL_INTERVAL_DAYS.min && interval <= MANUAL_INTERVAL_DAYS.max,
          'newest first, about monthly',
        );
        t.ok(Number(past.history[i]!.reading) <= Number(past.history[i - 1]!.reading), 'never running backwards');
      }
      t.ok(past.history.every((value) => value.source === 'manual' && /^00\d{3}\.\d{3}$/.test(value.reading)));
      const expected = meterExpectation(past);
      t.match(expected, { reference: past.history[0], usual: { basis: 'history' }, layout: { whole: 5, fraction: 3 } });
      t.ok(expected.usual!.perDay >= 0.05 && expected.usual!.perDay <= 1.1, `usual ${expected.usual!.perDay} m³ a day`);
    }
  },
);
