/**
 * Simulated meter histories for `meterlens eval --previous`: each labelled photo gets a past drawn from its file
 * name with a fixed seed (every run, and any subset of the photos, sees the same pasts). `A-B` gives it a previous
 * reading some consumption below its label and a fixed window; `dated` and `manual` grow the past a household meter
 * has, which the service judges as it judges a submission (meterExpectation).
 */
import { createHash } from 'node:crypto';
import type { MeterFacts, MeterReference } from '../pipeline/expect-reading.ts';
import { DEFAULT_MAX_FLOW, DEFAULT_USUAL_M3_PER_DAY } from '../plausibility-policy.ts';
import { layoutShownBy, type MeterLayout } from '../readers/layout.ts';
import { LAYOUTS } from '../readers/local/spec.ts';
import type { PlausibilityWindow } from '../readers/reader.ts';
import type { LabelledPhoto } from './dataset.ts';

/** Consumption since the previous reading, in m³, drawn uniformly between these. */
export interface ConsumptionRange {
  min: number;
  max: number;
}

/** The window reaches this far above the previous reading: a month at 2 m³ a day, generous for a household. */
export const SIMULATED_MAX_CONSUMPTION_M3 = 60;
/** The window reaches this far below the previous reading: ten turns of the fastest red wheel (litres). */
export const SIMULATED_TOLERANCE_M3 = 0.01;

const DRAW_SEED = 'meterlens-eval-previous-1';

/** `A-B` (m³, 0 ≤ A ≤ B), e.g. `0-30`; undefined when it is not that. */
export function parseConsumptionRange(spec: string): ConsumptionRange | undefined {
  const match = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(spec.trim());
  if (!match) return undefined;
  const [min, max] = [Number(match[1]), Number(match[2])];
  return min <= max ? { min, max } : undefined;
}

/**
 * The window for a photo whose previous reading was its label minus a consumption drawn from `consumption` (to the
 * litre, never below zero).
 */
export function simulatedWindow(photo: LabelledPhoto, consumption: ConsumptionRange): PlausibilityWindow {
  const used = consumption.min + drawn(photo, '') * (consumption.max - consumption.min);
  const previous = Math.max(0, Math.floor((Number(photo.accepted[0]) - used) * 1000) / 1000);
  return {
    reference: previous.toFixed(3),
    min: previous - SIMULATED_TOLERANCE_M3,
    max: previous + SIMULATED_MAX_CONSUMPTION_M3,
  };
}

/**
 * - `dated`: the photo comes with a `previous_reading` and `previous_read_at`, as a client sends the reading it
 *   last billed; the meter has no other history.
 * - `manual`: no reference fields; the meter is known only from MANUAL_READINGS readings a person entered, about
 *   monthly, the last of them PAST_DAYS before the photo.
 */
export const PAST_KINDS = ['dated', 'manual'] as const;
export type PastKind = (typeof PAST_KINDS)[number];

/** Days from the reference (or the last manual reading) to the photo, drawn uniformly between these. */
export const PAST_DAYS = { min: 20, max: 40 };
/** The meter's daily consumption, m³, drawn uniformly between these: a household's. */
export const PAST_RATE_M3_PER_DAY = { min: 0.1, max: 0.8 };
/** A manual history: this many readings (enough intervals for the meter's own usual consumption)… */
export const MANUAL_READINGS = 4;
/** …each this many days before the next, drawn uniformly… */
export const MANUAL_INTERVAL_DAYS = { min: 25, max: 35 };
/** …each interval's rate the meter's, up or down by a share of it drawn up to this (a household is not a clock). */
export const MANUAL_RATE_SPREAD = 0.3;

/** When every grown past's photo is taken: only the times between readings count. */
const PHOTO_TAKEN_AT = new Date('2026-06-01T12:00:00Z');
const DAY_MS = 86_400_000;

/**
 * The meter's past before the photo, as the service would hold it (`MeterFacts`, with the account's default max flow
 * and usual consumption). The meter ran at a drawn rate; each value of its past is the label less what it used
 * since, to its last wheel, written as its dial shows it (dialLayout). A label too low for the drawn rate over the
 * whole past slows the rate to what brings its earliest value to zero: a new meter.
 */
export function grownPast(photo: LabelledPhoto, kind: PastKind): MeterFacts {
  const label = Number(photo.accepted[0]);
  const layout = dialLayout(photo.accepted[0]!);
  const days = between(PAST_DAYS, drawn(photo, 'days'));
  const intervals =
    kind === 'manual'
      ? Array.from({ length: MANUAL_READINGS - 1 }, (_, i) =>
          between(MANUAL_INTERVAL_DAYS, drawn(photo, `interval-${i}`)),
        )
      : [];
  const rate = Math.min(
    between(PAST_RATE_M3_PER_DAY, drawn(photo, 'rate')),
    label / (days + intervals.reduce((sum, interval) => sum + interval, 0)),
  );
  const facts = { takenAt: PHOTO_TAKEN_AT, maxFlow: DEFAULT_MAX_FLOW, usualPerDay: DEFAULT_USUAL_M3_PER_DAY };
  const value = (used: number, daysBefore: number, source: MeterReference['source']): MeterReference => ({
    reading: dialReading(Math.max(0, label - used), layout),
    source,
    readAt: new Date(PHOTO_TAKEN_AT.getTime() - daysBefore * DAY_MS),
    submissionId: null,
    referenceId: null,
  });
  if (kind === 'dated') return { ...facts, previous: value(rate * days, days, 'previous_reading'), history: [] };
  const history: MeterReference[] = [];
  let used = rate * days * (1 + MANUAL_RATE_SPREAD * (2 * drawn(photo, 'spread-0') - 1));
  let daysBefore = days;
  history.push(value(used, daysBefore, 'manual'));
  intervals.forEach((interval, i) => {
    used += rate * interval * (1 + MANUAL_RATE_SPREAD * (2 * drawn(photo, `spread-${i + 1}`) - 1));
    daysBefore += interval;
    history.push(value(used, daysBefore, 'manual'));
  });
  return { ...facts, history };
}

/**
 * The layout the photo's dial has: its label's when the label keeps its leading zeros, else the first trained layout
 * (spec.json: the validation datasets' counters) that holds the label with the zeros it dropped, leading and
 * trailing (Toloka writes `00070.940` as `70.94`), else the label as written.
 */
function dialLayout(label: string): Pick<MeterLayout, 'whole' | 'fraction'> {
  const [whole = '', fraction = ''] = label.split('.');
  const holds = (trained: MeterLayout) => trained.whole >= whole.length && trained.fraction >= fraction.length;
  const shown =
    layoutShownBy(label) ?? LAYOUTS.map((trained) => layoutShownBy(trained.replaceAll('d', '0'))!).find(holds);
  return shown ?? { whole: whole.length, fraction: fraction.length };
}

/** `value` m³ as a dial of `layout` shows it: down to its last wheel, with leading zeros. */
function dialReading(value: number, layout: Pick<MeterLayout, 'whole' | 'fraction'>): string {
  const units = Math.floor(value * 10 ** layout.fraction + 1e-6);
  const digits = String(units).padStart(layout.whole + layout.fraction, '0');
  const whole = digits.slice(0, digits.length - layout.fraction);
  return layout.fraction ? `${whole}.${digits.slice(-layout.fraction)}` : whole;
}

function between(range: { min: number; max: number }, draw: number): number {
  return range.min + draw * (range.max - range.min);
}

/** A number in [0, 1) drawn for the photo and `what`; the A-B history's draw is `what` = ''. */
function drawn(photo: LabelledPhoto, what: string): number {
  const key = what ? `${DRAW_SEED}:${photo.file}:${what}` : `${DRAW_SEED}:${photo.file}`;
  return createHash('sha1').update(key).digest().readUInt32BE(0) / 2 ** 32;
}
