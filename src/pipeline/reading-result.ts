import type { Selection } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { ReadingResult } from '../schemas/meter-reading.ts';
import { needsReview } from '../meters/review.ts';
import type { ChainReading } from '../readers/chain.ts';
import { plausibilityJson, type PlausibilityJson, type ReadContext } from './expect-reading.ts';

/**
 * The readings columns a reading's API representation is made of, for a query that has the reading as `r`:
 * submissionRecords selects them, recordReading reads them back as it stores a reading.
 */
export const readingColumns = [
  'r.id as readingId',
  'r.reading',
  'r.value',
  'r.confidence',
  'r.escalated',
  'r.model',
  'r.digit_confidences as digitConfidences',
  'r.counter_box as counterBox',
  'r.whole_units_agreed as wholeUnitsAgreed',
] as const;

/** A reading as stored: one row of readingColumns. */
export type StoredReading = Selection<{ r: Database['readings'] }, 'r', (typeof readingColumns)[number]>;

/** Pixel size of the upright image the readers saw: the frame a reading's counter box is in. */
export interface Frame {
  width: number;
  height: number;
}

/**
 * What the service made of a reading: its meter, its plausibility, and whether a person should look
 * (src/meters/review.ts).
 */
export interface ReadingJudgement {
  meterId: string | null;
  plausibility: PlausibilityJson | undefined;
  needsReview: boolean;
}

/**
 * The one client-facing representation of a reading: the sync response, GET, the list, the history
 * and the webhook's `data` all spread it next to their own `reference_id` (and `status`).
 */
export function readingResult(stored: StoredReading, frame: Frame | null, judgement: ReadingJudgement): ReadingResult {
  const result: ReadingResult = {
    reading: stored.reading,
    value: Number(stored.value),
    confidence: stored.confidence,
    escalated: stored.escalated,
    model: stored.model,
    reading_id: Number(stored.readingId),
    meter_id: judgement.meterId,
    needs_review: judgement.needsReview,
    whole_units_agreed: stored.wholeUnitsAgreed,
  };
  if (judgement.plausibility) result.plausibility = judgement.plausibility;
  if (stored.counterBox && frame) {
    result.counter_box = { corners: stored.counterBox, image_width: frame.width, image_height: frame.height };
  }
  const digits = wheelDigits(stored.reading, stored.digitConfidences);
  if (digits) result.digits = digits;
  return result;
}

/** Each wheel's digit with the reader's confidence in it, when the reader gave one per wheel. */
function wheelDigits(reading: string, confidences: number[] | null): ReadingResult['digits'] {
  const digits = reading.replace('.', '');
  if (!confidences || confidences.length !== digits.length) return undefined;
  return confidences.map((confidence, wheel) => ({ digit: Number(digits.charAt(wheel)), confidence }));
}

/**
 * readingResult of a reading just recorded (`stored`, from what the reader chain `made`), before any
 * person saw it: the sync response, the webhook.
 */
export function freshReadingResult(stored: StoredReading, made: ChainReading, context: ReadContext): ReadingResult {
  return readingResult(stored, made.frame ?? null, {
    meterId: context.meterId,
    plausibility: plausibilityJson(made, context),
    needsReview: needsReview({
      status: 'completed',
      plausibility: made.plausibility,
      confidence: made.confidence,
      reviewBelow: context.reviewBelow,
      wholeUnitsAgreed: made.wholeUnitsAgreed,
      byPerson: false,
    }),
  });
}
