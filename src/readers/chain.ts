import sharp from 'sharp';
import type { Config } from '../config.ts';
import type { MeterLayout } from './layout.ts';
import { judgeReading, type JudgedReading } from './judge-reading.ts';
import {
  ReaderError,
  type MeterReader,
  type MeterReading,
  type Plausibility,
  type PlausibilityWindow,
  type ReaderFailureKind,
} from './reader.ts';

export interface ReadAttempt {
  reader: string;
  /**
   * `implausible`: a reading outside the plausibility window or the meter's layout, passed on whatever its confidence.
   */
  outcome: 'accepted' | 'low_confidence' | 'implausible' | ReaderFailureKind;
  ms: number;
  confidence?: number;
  error?: string;
}

export interface ChainReading extends MeterReading {
  reader: string;
  /** A later reader in the chain produced the result. */
  escalated: boolean;
  attempts: ReadAttempt[];
  readMs: number;
  plausibility: Plausibility;
  /** MeterReading's, false where the reader did not say (every hosted reader). */
  wholeUnitsAgreed: boolean;
  /** The free decode, when the window or the layout changed it (`corrected`). */
  unconstrainedReading?: string;
  /** Why the reading is `implausible`. */
  plausibilityReason?: string;
  /** Pixel size of the image that was read, when the reading has a counterBox (which is in this frame). */
  frame?: { width: number; height: number };
}

/**
 * - `unreadable`: the readers looked and found no reading.
 * - `readers_unavailable`: no reader could be asked (timeouts, 5xx, none configured); try again later.
 * - `invalid_image`: the upload passed the header check at the ack but could not be decoded.
 */
export type ReadFailureCode = 'unreadable' | 'readers_unavailable' | 'invalid_image';

export class ReadFailure extends Error {
  readonly code: ReadFailureCode;
  readonly attempts: ReadAttempt[];

  constructor(code: ReadFailureCode, message: string, attempts: ReadAttempt[]) {
    super(message);
    this.name = 'ReadFailure';
    this.code = code;
    this.attempts = attempts;
  }
}

/**
 * Each reader in turn until one is confident. A reader that fails, times out, answers
 * nonsense or is below its threshold passes the photo on; if every reader answered but none
 * was confident, the most confident answer stands, with its honest confidence.
 * The thresholds differ because the confidences mean different things: the local reader's is calibrated where its
 * weights carry a calibration (`escalateBelow`), a hosted model's is its own say-so (`hostedEscalateBelow`).
 * With a plausibility window or the meter's layout every reading is judged against them (the local reader reads
 * within them); an implausible one passes the photo on, and stands only when no reader's answer is plausible.
 */
export class ReaderChain {
  readonly readers: MeterReader[];
  readonly #thresholds: Pick<Config, 'escalateBelow' | 'hostedEscalateBelow'>;
  readonly #deadlineMs: number;

  constructor(
    readers: MeterReader[],
    config: Pick<Config, 'escalateBelow' | 'hostedEscalateBelow' | 'readerTimeoutMs' | 'readerRetries'>,
  ) {
    this.readers = readers;
    this.#thresholds = { escalateBelow: config.escalateBelow, hostedEscalateBelow: config.hostedEscalateBelow };
    // A reader's own retries each get readerTimeoutMs; this bounds all of them together.
    this.#deadlineMs = config.readerTimeoutMs * (config.readerRetries + 1);
  }

  async read(
    image: Buffer,
    signal?: AbortSignal,
    window?: PlausibilityWindow,
    layout?: MeterLayout,
  ): Promise<ChainReading> {
    const started = performance.now();
    const attempts: ReadAttempt[] = [];
    let best: { reading: JudgedReading; reader: MeterReader; index: number } | undefined;
    for (const [index, reader] of this.readers.entries()) {
      signal?.throwIfAborted();
      const attemptStarted = performance.now();
      const elapsed = () => Math.round(performance.now() - attemptStarted);
      try {
        const deadline = AbortSignal.timeout(this.#deadlineMs);
        const reading = judgeReading(
          await reader.read(image, signal ? AbortSignal.any([signal, deadline]) : deadline, window, layout),
          window,
          layout,
        );
        const confident = reading.confidence >= this.#escalateBelowFor(reader);
        const outcome =
          reading.plausibility === 'implausible' ? 'implausible' : confident ? 'accepted' : 'low_confidence';
        attempts.push({ reader: reader.name, outcome, ms: elapsed(), confidence: reading.confidence });
        // An accepted answer stands even against an earlier, more confident one held to a stricter threshold.
        if (outcome === 'accepted' || !best || preferred(reading, best.reading)) best = { reading, reader, index };
        if (outcome === 'accepted') break;
      } catch (error) {
        signal?.throwIfAborted();
        const kind = error instanceof ReaderError ? error.kind : 'unavailable';
        attempts.push({ reader: reader.name, outcome: kind, ms: elapsed(), error: (error as Error).message });
      }
    }
    const readMs = Math.round(performance.now() - started);
    if (best) {
      const frame = best.reading.counterBox ? await imageFrame(image) : undefined;
      return {
        ...best.reading,
        wholeUnitsAgreed: best.reading.wholeUnitsAgreed ?? false,
        reader: best.reader.name,
        escalated: best.index > 0,
        attempts,
        readMs,
        frame,
      };
    }
    if (attempts.every((attempt) => attempt.outcome === 'unavailable')) {
      const message = attempts.length
        ? `No reader could be reached: ${attempts.map((attempt) => `${attempt.reader}: ${attempt.error}`).join('; ')}`
        : 'No reader is configured: set READER_CHAIN or a hosted model API key';
      throw new ReadFailure('readers_unavailable', message, attempts);
    }
    const reasons = attempts.filter((attempt) => attempt.outcome !== 'unavailable').map((attempt) => attempt.error);
    throw new ReadFailure('unreadable', `No reading could be made from the photo: ${reasons.join('; ')}`, attempts);
  }

  #escalateBelowFor(reader: MeterReader): number {
    return reader.hosted ? this.#thresholds.hostedEscalateBelow : this.#thresholds.escalateBelow;
  }
}

/** A plausible reading beats an implausible one; between two alike, the more confident. */
function preferred(reading: JudgedReading, than: JudgedReading): boolean {
  const plausible = (judged: JudgedReading) => judged.plausibility !== 'implausible';
  if (plausible(reading) !== plausible(than)) return plausible(reading);
  return reading.confidence > than.confidence;
}

async function imageFrame(image: Buffer): Promise<{ width: number; height: number }> {
  const { width, height } = await sharp(image).metadata();
  return { width, height };
}
