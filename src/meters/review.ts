import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Db } from '../db/database.ts';
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

/** needsReview's rule in SQL, over SQL expressions of its facts: the list's needs_review filter and every stored submission read it through storedNeedsReview. */
export function needsReviewSql(facts: { [K in keyof ReviewFacts]: RawBuilder<unknown> }): RawBuilder<SqlBool> {
  const flagged = sql.join(FLAGGED.map((status) => sql.lit(status)));
  return sql<SqlBool>`(NOT ${facts.byPerson} AND (${facts.status} = 'failed' OR coalesce(${facts.plausibility} IN (${flagged}), false) OR coalesce(${facts.confidence}, 0) < ${facts.reviewBelow}))`;
}

/**
 * needs_review of a finished submission in a query of `meters as m` left-joined with `readings as r`
 * (its value for an unfinished one means nothing): corrections and the account's threshold by
 * subquery, so a count without those joins can filter on it too.
 */
export const storedNeedsReview = needsReviewSql({
  status: sql`m.status`,
  plausibility: sql`r.plausibility`,
  confidence: sql`r.confidence`,
  reviewBelow: sql`(SELECT review_below FROM accounts WHERE id = m.account_id)`,
  byPerson: sql`(m.mode = 'manual' OR EXISTS (SELECT 1 FROM reading_corrections WHERE meter_id = m.id))`,
});

/** An account's review settings: its review threshold and the usual consumption of a meter with too little history. */
export interface ReviewSettings {
  reviewBelow: number;
  usualM3PerDay: number;
}

/** A new account's settings (sql/023's column defaults): a household's usual consumption, and a look below 90. */
export const DEFAULT_REVIEW_BELOW = 90;
export const DEFAULT_USUAL_M3_PER_DAY = 1.5;

/** The most usual consumption a setting may name, m³ a day: far beyond any household, so a typo is caught. */
export const USUAL_M3_PER_DAY_LIMIT = 10_000;

export function isReviewBelow(value: number): boolean {
  return Number.isInteger(value) && value >= 0 && value <= 100;
}

export function isUsualM3PerDay(value: number): boolean {
  return Number.isFinite(value) && value > 0 && value <= USUAL_M3_PER_DAY_LIMIT;
}

/** Sets what is given of an account's review settings; the settings after, or undefined when there is no such account. */
export async function setReviewSettings(db: Db, accountId: string, change: Partial<ReviewSettings>): Promise<ReviewSettings | undefined> {
  const row = await db
    .updateTable('accounts')
    .set({
      ...(change.reviewBelow === undefined ? {} : { review_below: change.reviewBelow }),
      ...(change.usualM3PerDay === undefined ? {} : { usual_m3_per_day: change.usualM3PerDay }),
    })
    .where('id', '=', accountId)
    .returning(['review_below', 'usual_m3_per_day'])
    .executeTakeFirst();
  return row && { reviewBelow: row.review_below, usualM3PerDay: Number(row.usual_m3_per_day) };
}
