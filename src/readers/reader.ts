import type { MeterLayout } from './layout.ts';

/**
 * What every meter reader (hosted vision model or the offline local model) promises.
 * A reader receives the normalised JPEG (EXIF-rotated, long side ~1600 px) and either returns a
 * reading or throws a ReaderError saying why it could not.
 */

export interface MeterReading {
  /** Digits as the dial shows them: leading zeros kept, '.' between whole-unit and fractional wheels. */
  reading: string;
  value: number;
  /** Integer 0–100. */
  confidence: number;
  /** The model that produced the answer, e.g. `gpt-5.4-mini` or the local model's version. */
  model: string;
  /** The model's own answer, stored with the reading for operators. */
  raw: unknown;
  /** One 0–100 confidence per digit of `reading` (decimal point excluded), where the reader knows them. */
  digitConfidences?: number[];
  /**
   * The counter has fractional wheels and every reader of its window read these whole units (the local reader): a
   * reading less confident than the account's review threshold need not wait for review (src/meters/review.ts).
   */
  wholeUnitsAgreed?: boolean;
  /** Corners of the counter window in the normalised image, clockwise from top-left, in pixels. */
  counterBox?: Array<[number, number]>;
  /**
   * Set by a reader that read within the window and the layout itself (the local reader); the chain judges the others.
   */
  plausibility?: Plausibility;
  /** The reading without the window and the layout, when they changed it (`corrected`). */
  unconstrainedReading?: string;
  /** Why the reading is `implausible`. */
  plausibilityReason?: string;
}

/**
 * Where the meter's next reading may plausibly lie, in m³ (a reading's `value`): not below the reference reading
 * (`min` already allows the tolerance of a rolling wheel) and not above what the meter can have run since.
 */
export interface PlausibilityWindow {
  reference: string;
  min: number;
  max: number;
  /**
   * The most the meter usually runs to since the reference (its usual consumption, when the service knows one): a
   * reading above it is `suspicious`, so the local reader counts no reading above it as a rival (pipeline.ts).
   */
  usualMax?: number;
}

/**
 * - `ok`: inside the window.
 * - `corrected`: read within the window and the meter's layout, and that changed the reading (`unconstrainedReading`
 *   is the free one).
 * - `suspicious`: inside the window, but far above the meter's usual consumption.
 * - `implausible`: nothing probable inside the window (outside it, or readings of other whole units inside it as
 *   likely), or a reading in another layout than the meter's; the confidence is capped low and `plausibilityReason`
 *   says why.
 * - `unknown`: no window (no reference reading).
 */
export type Plausibility = 'ok' | 'corrected' | 'suspicious' | 'implausible' | 'unknown';

export interface MeterReader {
  readonly name: string;
  /**
   * A hosted vision model, whose confidence is its own say-so: the chain holds it to HOSTED_ESCALATE_BELOW. Any
   * other reader (the local one, whose confidence is its calibrated chance of being exact where its weights carry a
   * calibration) is held to ESCALATE_BELOW.
   */
  readonly hosted?: boolean;
  /** `window` and `layout`: what the service knows of the meter's next reading; the local reader reads within them. */
  read(image: Buffer, signal: AbortSignal, window?: PlausibilityWindow, layout?: MeterLayout): Promise<MeterReading>;
}

/**
 * - `unavailable`: the model could not be asked (timeout, 5xx, network); trying later may work.
 * - `unreadable`: the model looked and found no readable meter.
 * - `unparseable`: the model answered, but not with a reading we can use.
 */
export type ReaderFailureKind = 'unavailable' | 'unreadable' | 'unparseable';

export class ReaderError extends Error {
  readonly kind: ReaderFailureKind;

  constructor(kind: ReaderFailureKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ReaderError';
    this.kind = kind;
  }
}

export const READING_PATTERN = /^\d+(\.\d+)?$/;

/** Checks a reading string as a model wrote it and derives its numeric value. */
export function parseReading(reading: string): { reading: string; value: number } | undefined {
  const trimmed = reading.trim();
  if (!READING_PATTERN.test(trimmed)) return undefined;
  return { reading: trimmed, value: Number(trimmed) };
}

export function clampConfidence(confidence: number): number {
  if (!Number.isFinite(confidence)) return 0;
  return Math.max(0, Math.min(100, Math.round(confidence)));
}
