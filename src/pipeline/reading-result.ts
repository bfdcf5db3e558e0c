import type { ReadingResult } from '../schemas/meter-reading.ts';

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

/**
 * The one client-facing representation of a reading: the sync response, GET and the webhook's
 * `data` all spread it next to their own `reference_id` (and `status`).
 */
export function readingResult(recorded: RecordedReading): ReadingResult {
  const result: ReadingResult = {
    reading: recorded.reading,
    value: Number(recorded.value),
    confidence: recorded.confidence,
    escalated: recorded.escalated,
    model: recorded.model,
    reading_id: Number(recorded.readingId),
  };
  if (recorded.counterBox && recorded.frame) {
    result.counter_box = { corners: recorded.counterBox, image_width: recorded.frame.width, image_height: recorded.frame.height };
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
