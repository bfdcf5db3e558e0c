import t from 'tap';
import { usualAllowance, usualConsumption, type TrustedPoint } from '../../src/meters/usual-consumption.ts';
import { MIN_INTERVALS, USUAL_FLOOR_M3 } from '../../src/plausibility-policy.ts';

const start = new Date('2025-01-01T08:00:00Z').getTime();
const DAY = 86_400_000;
const HOUSEHOLD = 1.5;

/** `value` as a dial of 5 whole and `fraction` fractional wheels shows it. */
function dial(value: number, fraction = 3): string {
  return value.toFixed(fraction).padStart(fraction ? 6 + fraction : 5, '0');
}

/** Monthly (30-day) readings from `value`, each month using `use(month)` m³ a day; `fraction` red wheels. */
function monthly(months: number, use: (month: number) => number, value = 100, fraction = 3): TrustedPoint[] {
  const points = [{ at: new Date(start), reading: dial(value, fraction) }];
  for (let month = 0; month < months; month++) {
    value += use(month) * 30;
    points.push({ at: new Date(start + (month + 1) * 30 * DAY), reading: dial(value, fraction) });
  }
  return points;
}

/** Whether a reading `volume` m³ above the last point, `days` later, is within the usual. */
function usual(points: TrustedPoint[], volume: number, days: number): boolean {
  return volume <= usualAllowance(usualConsumption(points, HOUSEHOLD), days);
}

t.test('steady: the daily rate, no spread; a month of it is usual, ten times it is not', async (t) => {
  const points = monthly(12, () => 0.3);
  t.same(usualConsumption(points, HOUSEHOLD), { perDay: 0.3, spread: 0, basis: 'history' });
  t.ok(usual(points, 9, 30));
  t.ok(usual(points, 14, 30), 'half as much again');
  t.notOk(usual(points, 90, 30), 'ten times as much: a misread digit');
});

t.test('seasonal: the mean with its spread; the summer peak is usual, a shifted digit is not', async (t) => {
  const season = (month: number) => 0.4 + 0.2 * Math.sin((month / 12) * 2 * Math.PI);
  const estimate = usualConsumption(monthly(12, season), HOUSEHOLD);
  t.ok(Math.abs(estimate.perDay - 0.4) < 0.02, `about 0.4 m³ a day (${estimate.perDay})`);
  t.ok(estimate.spread > 0.1 && estimate.spread < 0.2, `spread of the seasons (${estimate.spread})`);
  t.ok(usual(monthly(12, season), 0.6 * 30, 30), 'a month at the summer peak');
  t.notOk(usual(monthly(12, season), 4 * 30, 30), 'ten times the mean');
});

t.test('vacant: nothing used; a little is within the floor, a household month is not', async (t) => {
  const points = monthly(6, () => 0);
  t.same(usualConsumption(points, HOUSEHOLD), { perDay: 0, spread: 0, basis: 'history' });
  t.ok(usual(points, USUAL_FLOOR_M3 / 2, 30), 'a tap run once');
  t.notOk(usual(points, 9, 30), 'a month of a household');
});

t.test('leaking: the recent months weigh, so the leak is the meter’s behaviour now', async (t) => {
  const leak = (month: number) => (month < 12 ? 0.3 : 0.3 + (month - 11) * 0.5);
  const points = monthly(18, leak);
  const estimate = usualConsumption(points, HOUSEHOLD);
  t.ok(estimate.perDay > 1, `the last twelve months, leak included (${estimate.perDay})`);
  t.ok(usual(points, 3.3 * 30, 30), 'the leak going on is no misread');
  t.notOk(
    usual(
      monthly(12, () => 0.3),
      3.3 * 30,
      30,
    ),
    'the same month on a steady meter is suspicious',
  );
});

t.test('too little history: the account default, without spread', async (t) => {
  const points = monthly(MIN_INTERVALS - 1, () => 0.3);
  t.same(usualConsumption(points, HOUSEHOLD), { perDay: HOUSEHOLD, spread: 0, basis: 'default' });
  t.same(usualConsumption([], 0.8), { perDay: 0.8, spread: 0, basis: 'default' });
});

t.test('readings closer than a day merge; a drop (meter replaced) starts the history again', async (t) => {
  const hourly = monthly(4, () => 0.3).flatMap((point) => [
    point,
    { at: new Date(point.at.getTime() + 3_600_000), reading: dial(Number(point.reading) + 0.5) },
  ]);
  t.equal(usualConsumption(hourly, HOUSEHOLD).basis, 'history');
  t.ok(Math.abs(usualConsumption(hourly, HOUSEHOLD).perDay - 0.3) < 0.02, 'an hour apart adds no interval of its own');
  const replaced = [
    ...monthly(12, () => 2),
    ...monthly(2, () => 0.3, 5).map((point) => ({
      at: new Date(point.at.getTime() + 400 * DAY),
      reading: point.reading,
    })),
  ];
  t.same(
    usualConsumption(replaced, HOUSEHOLD),
    { perDay: HOUSEHOLD, spread: 0, basis: 'default' },
    'the old meter’s rate says nothing of the new one',
  );
});

t.test('a wheel half-way, read one step lower, is no replaced meter; more than a step lower is', async (t) => {
  const after = (points: TrustedPoint[], down: number, fraction = 3) => [
    ...points,
    {
      at: new Date(points.at(-1)!.at.getTime() + 2 * DAY),
      reading: dial(Number(points.at(-1)!.reading) - down, fraction),
    },
  ];
  const steady = monthly(12, () => 0.3);
  t.equal(usualConsumption(after(steady, 0.001), HOUSEHOLD).basis, 'history', 'the last red wheel one lower');
  t.equal(usualConsumption(after(steady, 0.002), HOUSEHOLD).basis, 'default', 'two of its steps: started again');
  const wholeUnits = monthly(12, () => 1, 100, 0);
  t.equal(usualConsumption(after(wholeUnits, 1, 0), HOUSEHOLD).basis, 'history', 'a 5 + 0 dial one unit lower');
  t.equal(usualConsumption(after(wholeUnits, 2, 0), HOUSEHOLD).basis, 'default', 'two units: started again');
});

t.test('the allowance: at least a day of it, plus the floor', async (t) => {
  t.equal(usualAllowance({ perDay: 0.3, spread: 0, basis: 'history' }, 0.01), 0.9 + USUAL_FLOOR_M3);
  t.equal(usualAllowance({ perDay: 0.3, spread: 0.5, basis: 'history' }, 10), (0.3 + 1.5) * 10 + USUAL_FLOOR_M3);
  t.equal(usualAllowance({ perDay: HOUSEHOLD, spread: 0, basis: 'default' }, 31), 3 * HOUSEHOLD * 31 + USUAL_FLOOR_M3);
});
