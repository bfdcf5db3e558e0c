import type { Plausibility } from '../readers/reader.ts';

/** Plausibility statuses that flag a reading: it needs review, and is no reference, until a person confirms it. */
export const FLAGGED: readonly Plausibility[] = ['implausible', 'suspicious'];

/** What decides whether a finished submission's reading can be billed without a person's look. */
export interface ReviewFacts {
  status: 'completed' | 'failed';
  plausibility: Plausibility | null;
  confidence: number | null;
  /** The account's review threshold: a reading less confident than this needs a look. */
  reviewBelow: number;
  /** A person gave this value: a correction, a confirmation, or a manual reading. */
  byPerson: boolean;
}

/**
 * `needs_review`, the one flag a client bills on (README "Plausibility"): false when a person
 * gave, corrected or confirmed the value; else true for a failed submission, a reading that is
 * `implausible` or `suspicious`, or one less confident than the account's review threshold.
 */
export function needsReview(facts: ReviewFacts): boolean {
  if (facts.byPerson) return false;
  if (facts.status === 'failed') return true;
  if (facts.plausibility && FLAGGED.includes(facts.plausibility)) return true;
  return (facts.confidence ?? 0) < facts.reviewBelow;
}
