/**
 * A meter's usual consumption, from its trusted history (corrections and confirmations, manual
 * readings, readings nobody flagged): what it normally uses a day and how much that varies. A
 * reading far above it is `suspicious` (src/readers/judge-reading.ts): possible for a meter, but not
 * this meter's behaviour.
 */
import {
  MAX_INTERVALS,
  MIN_INTERVAL_DAYS,
  MIN_INTERVALS,
  USUAL_FACTOR,
  USUAL_FLOOR_M3,
  USUAL_SPREADS,
} from '../plausibility-policy.ts';
import { lowestNextValue } from '../readers/layout.ts';

/** A value the service trusts, as the dial showed it (`00123.456`), and when the meter showed it. */
export interface TrustedPoint {
  at: Date;
  reading: string;
}

export interface UsualConsumption {
  /** m³ a day. */
  perDay: number;
  /** How much the daily rate varies between readings: its standard deviation, m³ a day. */
  spread: number;
  /** history: the meter's own readings; default: too little history, the account's usual consumption. */
  basis: 'history' | 'default';
}

const DAY_MS = 86_400_000;

/**
 * The usual consumption of a meter from its trusted points (any order). Only the points after its
 * last drop count (replacedBefore: the old meter's rate says nothing); intervals shorter than a day
 * are merged into the next; the last MAX_INTERVALS of them are weighed by their length. Fewer than
 * MIN_INTERVALS: the account's default, with no spread.
 */
export function usualConsumption(points: TrustedPoint[], defaultPerDay: number): UsualConsumption {
  const intervals = recentIntervals(points);
  if (intervals.length < MIN_INTERVALS) return { perDay: defaultPerDay, spread: 0, basis: 'default' };
  const days = intervals.reduce((sum, interval) => sum + interval.days, 0);
  const perDay = intervals.reduce((sum, interval) => sum + interval.volume, 0) / days;
  const variance =
    intervals.reduce((sum, interval) => sum + interval.days * (interval.volume / interval.days - perDay) ** 2, 0) /
    days;
  return { perDay: round(perDay), spread: round(Math.sqrt(variance)), basis: 'history' };
}

/**
 * The most the meter usually uses in `days` (at least one day), m³: `factor` times its rate, or its
 * rate plus USUAL_SPREADS spreads, whichever is more, and the floor. A reading above it is
 * suspicious (USUAL_FACTOR); a leak is told by a factor of its own (ANOMALY_LEAK_FACTOR).
 */
export function usualAllowance(usual: UsualConsumption, days: number, factor = USUAL_FACTOR): number {
  const rate = Math.max(factor * usual.perDay, usual.perDay + USUAL_SPREADS * usual.spread);
  return round(rate * Math.max(days, 1) + USUAL_FLOOR_M3);
}

function recentIntervals(points: TrustedPoint[]): Array<{ days: number; volume: number }> {
  const sorted = points
    .map((point) => ({ ...point, value: Number(point.reading) }))
    .sort((a, b) => a.at.getTime() - b.at.getTime());
  const lastDrop = sorted.findLastIndex((point, index) => index > 0 && replacedBefore(point, sorted[index - 1]!));
  const current = sorted.slice(Math.max(lastDrop, 0));
  const intervals: Array<{ days: number; volume: number }> = [];
  let start = current[0];
  for (const point of current.slice(1)) {
    const days = (point.at.getTime() - start!.at.getTime()) / DAY_MS;
    if (days < MIN_INTERVAL_DAYS) continue;
    intervals.push({ days, volume: point.value - start!.value });
    start = point;
  }
  return intervals.slice(-MAX_INTERVALS);
}

/**
 * Whether the meter was replaced between `earlier` and `point`: the value fell below lowestNextValue. One step lower is
 * a wheel half-way, read either way, and must not throw away the meter's history.
 */
function replacedBefore(point: { value: number }, earlier: { reading: string }): boolean {
  return point.value < lowestNextValue(earlier.reading);
}

function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
