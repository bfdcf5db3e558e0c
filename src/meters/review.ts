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
  /**
   * The account's review threshold: a reading less confident than this needs a look, unless its whole units are
   * agreed.
   */
  reviewBelow: number;
  /**
   * The counter has fractional wheels and every reader of its window read the same whole units (MeterReading's
   * `wholeUnitsAgreed`): its confidence is low for the litres only, and it bills in m³ without a look.
   */
  wholeUnitsAgreed: boolean;
  /** A person gave this value: a correction, a confirmation, or a manual reading. */
  byPerson: boolean;
}

/**
 * Why a reading needs review: it failed, its plausibility is flagged, or it is less confident than the account's
 * threshold and its whole units are not agreed.
 */
export type ReviewReason =
  | { kind: 'failed' }
  | { kind: 'flagged'; plausibility: Plausibility }
  | { kind: 'unsure'; confidence: number; reviewBelow: number };

/**
 * Why a finished submission's reading needs a person's look, if it does: nothing when a person gave,
 * corrected or confirmed the value; else a failed submission, a reading that is `implausible` or
 * `suspicious`, one less confident than the account's review threshold whose whole units are not agreed (all that
 * apply). On photos no network had learned, an agreed reading below the threshold was right in whole units every
 * time (ml/EXPERIMENTS.md, "whole units agreed").
 */
export function reviewReasons(facts: ReviewFacts): ReviewReason[] {
  if (facts.byPerson) return [];
  const reasons: ReviewReason[] = [];
  if (facts.status === 'failed') reasons.push({ kind: 'failed' });
  if (facts.plausibility && FLAGGED.includes(facts.plausibility))
    reasons.push({ kind: 'flagged', plausibility: facts.plausibility });
  if (facts.status === 'completed' && (facts.confidence ?? 0) < facts.reviewBelow && !facts.wholeUnitsAgreed)
    reasons.push({ kind: 'unsure', confidence: facts.confidence ?? 0, reviewBelow: facts.reviewBelow });
  return reasons;
}

/**
 * `needs_review`, the one flag a client bills on (docs/readings.md, "needs_review"): whether reviewReasons gives any.
 */
export function needsReview(facts: ReviewFacts): boolean {
  return reviewReasons(facts).length > 0;
}

/** needsReview's rule in SQL, over SQL expressions of its facts: what refreshNeedsReview stores. */
export function needsReviewSql(facts: { [K in keyof ReviewFacts]: RawBuilder<unknown> }): RawBuilder<SqlBool> {
  const flagged = sql.join(FLAGGED.map((status) => sql.lit(status)));
  return sql<SqlBool>`(NOT ${facts.byPerson} AND (${facts.status} = 'failed' OR coalesce(${facts.plausibility} IN (${flagged}), false) OR (coalesce(${facts.confidence}, 0) < ${facts.reviewBelow} AND NOT coalesce(${facts.wholeUnitsAgreed}, false))))`;
}

/** needsReview of the submission `m` (a row of `submissions as m`) from its facts as they stand now. */
const currentNeedsReview = needsReviewSql({
  status: sql`m.status`,
  plausibility: sql`(SELECT plausibility FROM readings WHERE submission_id = m.id)`,
  confidence: sql`(SELECT confidence FROM readings WHERE submission_id = m.id)`,
  reviewBelow: sql`(SELECT review_below FROM accounts WHERE id = m.account_id)`,
  wholeUnitsAgreed: sql`(SELECT whole_units_agreed FROM readings WHERE submission_id = m.id)`,
  byPerson: sql`(m.mode = 'manual' OR EXISTS (SELECT 1 FROM reading_corrections WHERE submission_id = m.id))`,
});

/**
 * Stores needs_review (submissions.needs_review, which the review queue's index holds) of one submission
 * or of every submission of an account, from their facts as they stand. Called in the transaction of
 * each change to those facts: a submission finishing, a correction or confirmation, a new threshold;
 * one that stores a single submission's has taken holdReviewThreshold first. An unfinished
 * submission's is false. Rows whose value stays are not written.
 */
export async function refreshNeedsReview(tx: Db, of: { submissionId: string } | { accountId: string }): Promise<void> {
  const current = sql<boolean>`(m.status IN ('completed', 'failed') AND ${currentNeedsReview})`;
  await tx
    .updateTable('submissions as m')
    .set({ needs_review: current })
    .where(
      'submissionId' in of ? sql<SqlBool>`m.id = ${of.submissionId}` : sql<SqlBool>`m.account_id = ${of.accountId}`,
    )
    .where(sql<SqlBool>`m.needs_review <> ${current}`)
    .execute();
}

/**
 * Holds the account's review threshold still until the transaction ends: shared by each transaction
 * that stores one submission's needs_review, exclusive while setReviewSettings changes it. Without it a
 * submission finishing during a threshold change could be judged by the old threshold after the
 * account-wide refresh had passed it, and keep the wrong flag. Taken before the transaction locks any
 * of the account's submissions, so the two kinds wait for each other, never in a circle.
 */
export async function holdReviewThreshold(
  tx: Db,
  accountId: string,
  mode: 'shared' | 'exclusive' = 'shared',
): Promise<void> {
  const key = sql`hashtextextended(${`meterlens review threshold ${accountId}`}, 0)`;
  await (mode === 'shared'
    ? sql`SELECT pg_advisory_xact_lock_shared(${key})`
    : sql`SELECT pg_advisory_xact_lock(${key})`
  ).execute(tx);
}

/**
 * needs_review as stored (refreshNeedsReview), in a query of `submissions as m`: false while a submission is
 * unfinished.
 */
export const storedNeedsReview = sql<SqlBool>`m.needs_review`;

/**
 * The review queue's count stops here: what every dashboard request pays for it stays bounded however long the queue
 * grows.
 */
export const REVIEW_COUNT_LIMIT = 1000;

/**
 * How many submissions of the account (an id, or an SQL expression of one) wait for review, up to
 * REVIEW_COUNT_LIMIT: a range of the queue's index.
 */
export function reviewWaitingCount(account: string | RawBuilder<unknown> | ReturnType<typeof sql.ref>) {
  return sql<number>`(SELECT count(*)::int FROM (SELECT FROM submissions WHERE account_id = ${account} AND needs_review LIMIT ${sql.lit(REVIEW_COUNT_LIMIT)}) AS waiting)`;
}

/**
 * How many submissions of a meter (its meter_points id, or an SQL expression of one) wait for review:
 * a range of the index submissions_meter_point_review, which holds only the submissions that wait.
 */
export function meterWaitingCount(meterPoint: string | ReturnType<typeof sql.ref>) {
  return sql<number>`(SELECT count(*)::int FROM submissions WHERE meter_point_id = ${meterPoint} AND needs_review)`;
}

/** How many submissions of the meter point wait for review (meterWaitingCount), for one meter's page. */
export async function meterWaitingForReview(db: Db, meterPointId: string): Promise<number> {
  const row = await db.selectNoFrom(meterWaitingCount(meterPointId).as('waiting')).executeTakeFirstOrThrow();
  return row.waiting;
}

/**
 * An account's review settings: its review threshold, the usual consumption of a meter with too little history, and
 * whether `meterlens train` may learn from the readings of hosted readers that need no review (exportDataset).
 */
export interface ReviewSettings {
  reviewBelow: number;
  usualM3PerDay: number;
  trainOnHosted: boolean;
}

/** The most usual consumption a setting may name, m³ a day: far beyond any household, so a typo is caught. */
export const USUAL_M3_PER_DAY_LIMIT = 10_000;

export function isReviewBelow(value: number): boolean {
  return Number.isInteger(value) && value >= 0 && value <= 100;
}

export function isUsualM3PerDay(value: number): boolean {
  return Number.isFinite(value) && value > 0 && value <= USUAL_M3_PER_DAY_LIMIT;
}

/**
 * Sets what is given of an account's review settings; the settings after, or undefined when there is
 * no such account. A new threshold applies to the readings already stored too.
 */
export async function setReviewSettings(
  db: Db,
  accountId: string,
  change: Partial<ReviewSettings>,
): Promise<ReviewSettings | undefined> {
  return db.transaction().execute(async (tx) => {
    if (change.reviewBelow !== undefined) await holdReviewThreshold(tx, accountId, 'exclusive');
    const row = await tx
      .updateTable('accounts')
      .set({
        ...(change.reviewBelow === undefined ? {} : { review_below: change.reviewBelow }),
        ...(change.usualM3PerDay === undefined ? {} : { usual_m3_per_day: change.usualM3PerDay }),
        ...(change.trainOnHosted === undefined ? {} : { train_on_hosted: change.trainOnHosted }),
      })
      .where('id', '=', accountId)
      .returning(['review_below', 'usual_m3_per_day', 'train_on_hosted'])
      .executeTakeFirst();
    if (row && change.reviewBelow !== undefined) await refreshNeedsReview(tx, { accountId });
    return (
      row && {
        reviewBelow: row.review_below,
        usualM3PerDay: Number(row.usual_m3_per_day),
        trainOnHosted: row.train_on_hosted,
      }
    );
  });
}
