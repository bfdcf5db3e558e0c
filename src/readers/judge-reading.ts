/** Judging a reading against the meter's layout and plausibility window, for every reader alike. */
import { IMPLAUSIBLE_CONFIDENCE_CAP } from '../plausibility-policy.ts';
import { outsideLayoutReason, type MeterLayout } from './layout.ts';
import type { MeterReading, Plausibility, PlausibilityWindow } from './reader.ts';

export type JudgedReading = MeterReading & { plausibility: Plausibility };

/**
 * A reading with its plausibility: `implausible` (confidence capped, with the reason) in another layout than the
 * meter's, whoever read it; else a reader's own judgement when it read within the window and layout itself;
 * `unknown` without a window; otherwise `ok` inside the window and `implausible` outside it.
 */
export function judgeReading(reading: MeterReading, window?: PlausibilityWindow, layout?: MeterLayout): JudgedReading {
  const otherLayout = layout && outsideLayoutReason(reading.reading, layout);
  if (otherLayout) return implausible(reading, otherLayout);
  if (reading.plausibility) return { ...reading, plausibility: reading.plausibility };
  if (!window) return { ...reading, plausibility: 'unknown' };
  const reason = outsideWindowReason(reading, window);
  return reason ? implausible(reading, reason) : { ...reading, plausibility: 'ok' };
}

/** Why `reading` lies outside the window; undefined when it lies inside. */
export function outsideWindowReason(
  { reading, value }: Pick<MeterReading, 'reading' | 'value'>,
  window: PlausibilityWindow,
): string | undefined {
  if (value < window.min)
    return `${reading} is below the reference reading ${window.reference} (meters do not run backwards)`;
  if (value > window.max) {
    return `${reading} is more than the meter can have run since the reference reading ${window.reference} (at most ${formatM3(window.max)} m³)`;
  }
  return undefined;
}

/**
 * A plausible reading far above the meter's usual consumption since the reference (`usualMax`) is
 * `suspicious`: physically possible, but not this meter's behaviour. Its confidence stays: the
 * reader is sure of what it saw, the question is whether the dial says what the meter used.
 */
export function judgeUsual<T extends Pick<JudgedReading, 'reading' | 'value' | 'plausibility' | 'plausibilityReason'>>(
  reading: T,
  usual: { max: number; perDay: number; basis: 'history' | 'default' } | undefined,
): T {
  if (!usual || (reading.plausibility !== 'ok' && reading.plausibility !== 'corrected') || reading.value <= usual.max)
    return reading;
  const usually =
    usual.basis === 'history'
      ? `this meter usually uses about ${formatM3(usual.perDay)} m³ a day`
      : `with no history, about ${formatM3(usual.perDay)} m³ a day is usual`;
  return {
    ...reading,
    plausibility: 'suspicious',
    plausibilityReason: `${reading.reading} is far more than usual since the reference reading (${usually}: at most ${formatM3(usual.max)} m³ expected)`,
  };
}

export function implausible(reading: MeterReading, reason: string): JudgedReading {
  return {
    ...reading,
    confidence: Math.min(reading.confidence, IMPLAUSIBLE_CONFIDENCE_CAP),
    plausibility: 'implausible',
    plausibilityReason: reason,
  };
}

function formatM3(value: number): string {
  return String(Number(value.toFixed(3)));
}
