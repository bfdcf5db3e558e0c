import type { Config } from '../config.ts';
import { observeReaderAttempts } from '../metrics.ts';
import { ReaderError, type MeterReader, type MeterReading, type ReaderFailureKind } from '../readers/reader.ts';

export interface ReadAttempt {
  reader: string;
  outcome: 'accepted' | 'low_confidence' | ReaderFailureKind;
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
}

/**
 * - `unreadable`: the readers looked and found no reading.
 * - `readers_unavailable`: no reader could be asked (timeouts, 5xx, none configured); try again later.
 */
export type ReadFailureCode = 'unreadable' | 'readers_unavailable';

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
 * Step 6: each reader in turn until one is confident. A reader that fails, times out, answers
 * nonsense or is below `escalateBelow` passes the photo on; if every reader answered but none
 * was confident, the most confident answer stands, with its honest confidence.
 */
export class ReaderChain {
  readonly readers: MeterReader[];
  readonly #escalateBelow: number;
  readonly #deadlineMs: number;

  constructor(readers: MeterReader[], config: Pick<Config, 'escalateBelow' | 'readerTimeoutMs' | 'readerRetries'>) {
    this.readers = readers;
    this.#escalateBelow = config.escalateBelow;
    // A reader's own retries each get readerTimeoutMs; this bounds all of them together.
    this.#deadlineMs = config.readerTimeoutMs * (config.readerRetries + 1);
  }

  async read(image: Buffer, signal?: AbortSignal): Promise<ChainReading> {
    const started = performance.now();
    const attempts: ReadAttempt[] = [];
    let best: { reading: MeterReading; index: number } | undefined;
    for (const [index, reader] of this.readers.entries()) {
      signal?.throwIfAborted();
      const attemptStarted = performance.now();
      const elapsed = () => Math.round(performance.now() - attemptStarted);
      try {
        const deadline = AbortSignal.timeout(this.#deadlineMs);
        const reading = await reader.read(image, signal ? AbortSignal.any([signal, deadline]) : deadline);
        const confident = reading.confidence >= this.#escalateBelow;
        attempts.push({ reader: reader.name, outcome: confident ? 'accepted' : 'low_confidence', ms: elapsed(), confidence: reading.confidence });
        if (!best || reading.confidence > best.reading.confidence) best = { reading, index };
        if (confident) break;
      } catch (error) {
        signal?.throwIfAborted();
        const kind = error instanceof ReaderError ? error.kind : 'unavailable';
        attempts.push({ reader: reader.name, outcome: kind, ms: elapsed(), error: (error as Error).message });
      }
    }
    observeReaderAttempts(attempts);
    const readMs = Math.round(performance.now() - started);
    if (best) {
      return { ...best.reading, reader: this.readers[best.index].name, escalated: best.index > 0, attempts, readMs };
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
}
