import type { ReadingResult } from '../schemas/meter-reading.ts';
import { needsReview } from '../meters/review.ts';
import type { ChainReading } from '../readers/chain.ts';
import { plausibilityJson, type PlausibilityJson, type ReadContext } from './expect-reading.ts';

/** A reading as recorded, whether it comes straight from the reader chain or back from the database. */
export interface RecordedReading {
  readingId: string | number;
  reading: string;
  /** numeric comes back from PostgreSQL as a string. */
  value: number | string;
  confidence: number;
  escalated: boolean;
  model: string;
  digitConfidences?: number[] | null;
  counterBox?: Array<[number, number]> | null;
  /** Pixel size of the upright image the readers saw: the frame `counterBox` is in. */
  frame?: { width: number; height: number } | null;
}

/** What the service made of a reading: its meter, its plausibility, and whether a person should look (src/meters/review.ts). */
export interface ReadingJudgement {
  meterId: string | null;
  plausibility: PlausibilityJson | undefined;
  needsReview: boolean;
}

/**
 * The one client-facing representation of a reading: the sync response, GET, the list, the history
 * and the webhook's `data` all spread it next to their own `reference_id` (and `status`).
 */
export function readingResult(recorded: RecordedReading, judgement: ReadingJudgement): ReadingResult {
  const result: ReadingResult = {
    reading: recorded.reading,
    value: Number(recorded.value),
    confidence: recorded.confidence,
    escalated: recorded.escalated,
    model: recorded.model,
    reading_id: Number(recorded.readingId),
    meter_id: judgement.meterId,
    needs_review: judgement.needsReview,
  };
  if (judgement.plausibility) result.plausibility = judgement.plausibility;
  if (recorded.counterBox && recorded.frame) {
    result.counter_box = {
      corners: recorded.counterBox,
      image_width: recorded.frame.width,
      image_height: recorded.frame.height,
    };
  }
  const digits = wheelDigits(recorded.reading, recorded.digitConfidences);
  if (digits) result.digits = digits;
  return result;
}

/** Each wheel's digit with the reader's confidence in it, when the reader gave one per wheel. */
function wheelDigits(reading: string, confidences: number[] | null | undefined): ReadingResult['digits'] {
  const digits = reading.replace('.', '');
  if (!confidences || confidences.length !== digits.length) return undefined;
  return confidences.map((confidence, wheel) => ({ digit: Number(digits.charAt(wheel)), confidence }));
}

/** readingResult of a reading just made, before any person saw it (the sync response, the webhook). */
export function freshReadingResult(reading: ChainReading, readingId: string, context: ReadContext): ReadingResult {
  return readingResult(
    { ...reading, readingId },
    {
      meterId: context.meterId,
      plausibility: plausibilityJson(reading, context),
      needsReview: needsReview({
        status: 'completed',
        plausibility: reading.plausibility,
        confidence: reading.confidence,
        reviewBelow: context.reviewBelow,
        byPerson: false,
      }),
    },
  );
}
