import type { PgBoss } from 'pg-boss';
import type { Db } from '../db/database.ts';
import type { SubmissionMode } from '../db/schema.ts';
import type { ServiceDeps } from '../deps.ts';
import { type AnomalyKind, checkMeterAnomalies } from '../meters/anomalies.ts';
import { FLAGGED, holdReviewThreshold, refreshNeedsReview } from '../meters/review.ts';
import { observeAnomalies, observeFailedReading, observeReading } from '../metrics.ts';
import type { ChainReading } from '../readers/chain.ts';
import { COUNTED_FAILURES, releaseUsage, usageMonth } from './check-usage.ts';
import { notify } from './notify.ts';
import type { ReadContext } from './expect-reading.ts';
import { readingColumns, type StoredReading } from './reading-result.ts';

export interface SubmissionRef {
  submissionId: string;
  accountId: string;
  referenceId: string;
  mode: SubmissionMode;
}

export interface FailureReason {
  code: string;
  message: string;
}

/**
 * Step 7 (record) and step 8 (notify) in one transaction: the meter leaves pending/processing
 * exactly once, with its needs_review stored, and an async client's webhook is queued if and only
 * if that happened. A reading nobody flagged of a named meter is checked for anomalies in it too
 * (src/meters/anomalies.ts).
 * Returns the reading as stored, or undefined when the meter had already finished (a retried job,
 * or one that expired while it ran).
 */
export async function recordReading(
  deps: Pick<ServiceDeps, 'db' | 'boss' | 'config'>,
  submission: SubmissionRef,
  result: ChainReading,
  context: ReadContext,
): Promise<StoredReading | undefined> {
  let anomalies: AnomalyKind[] = [];
  const stored = await deps.db.transaction().execute(async (tx) => {
    await holdReviewThreshold(tx, submission.accountId);
    const finished = await finish(tx, submission.submissionId, 'completed');
    if (!finished) return undefined;
    // Stored (the CTE `r`) and read back in readingColumns in one statement: the sync response and
    // the webhook show the row GET will show.
    const stored = await tx
      .with('r', (db) =>
        db
          .insertInto('readings')
          .values({
            submission_id: submission.submissionId,
            reading: result.reading,
            value: result.value,
            confidence: result.confidence,
            reader: result.reader,
            model: result.model,
            escalated: result.escalated,
            digit_confidences: result.digitConfidences ?? null,
            whole_units_agreed: result.wholeUnitsAgreed,
            counter_box: result.counterBox ? JSON.stringify(result.counterBox) : null,
            attempts: JSON.stringify(result.attempts),
            read_ms: result.readMs,
            raw_answer: result.raw === undefined ? null : JSON.stringify(result.raw),
            plausibility: result.plausibility,
            reference_reading: context.reference?.reading ?? null,
            reference_source: context.reference?.source ?? null,
            reference_read_at: context.reference?.readAt ?? null,
            window_min: context.window?.min ?? null,
            window_max: context.window?.max ?? null,
            usual_max: context.usual?.max ?? null,
            reference_submission_id: context.reference?.submissionId ?? null,
            unconstrained_reading: result.unconstrainedReading ?? null,
            plausibility_reason: result.plausibilityReason ?? null,
          })
          .returningAll(),
      )
      .selectFrom('r')
      .select(readingColumns)
      .executeTakeFirstOrThrow();
    await refreshNeedsReview(tx, { submissionId: submission.submissionId });
    if (submission.mode === 'async')
      await notify(tx, deps.boss, { status: 'completed', ...submission, reading: result, stored, context });
    // A reading nobody flagged is a trusted value of its meter.
    if (finished.meterPointId && !FLAGGED.includes(result.plausibility))
      anomalies = await checkMeterAnomalies(tx, deps, finished.meterPointId);
    return stored;
  });
  if (stored) {
    observeReading(result);
    observeAnomalies(anomalies);
  }
  return stored;
}

/**
 * Step 7 for a submission that was not read: it fails exactly once, and an async client's webhook is
 * queued if and only if that happened. A failure that is not a verdict on the photo (COUNTED_FAILURES)
 * gives its count back in the same transaction.
 */
export async function recordFailure(
  deps: { db: Db; boss: PgBoss },
  submission: SubmissionRef,
  reason: FailureReason,
): Promise<boolean> {
  const failed = await deps.db.transaction().execute(async (tx) => {
    await holdReviewThreshold(tx, submission.accountId);
    const finished = await finish(tx, submission.submissionId, 'failed', reason);
    if (!finished) return false;
    if (!COUNTED_FAILURES.includes(reason.code))
      await releaseUsage(tx, submission.accountId, usageMonth(finished.createdAt));
    await refreshNeedsReview(tx, { submissionId: submission.submissionId });
    if (submission.mode === 'async') await notify(tx, deps.boss, { status: 'failed', ...submission, error: reason });
    return true;
  });
  if (failed) observeFailedReading(reason.code);
  return failed;
}

/** pending → processing; false when the meter has already finished. */
export async function markProcessing(db: Db, submissionId: string): Promise<boolean> {
  const updated = await db
    .updateTable('submissions')
    .set({ status: 'processing', started_at: new Date() })
    .where('id', '=', submissionId)
    .where('status', 'in', ['pending', 'processing'])
    .executeTakeFirst();
  return updated.numUpdatedRows > 0n;
}

/** Its meter point, or undefined when the meter had already finished. */
async function finish(
  tx: Db,
  submissionId: string,
  status: 'completed' | 'failed',
  reason?: FailureReason,
): Promise<{ meterPointId: string | null; createdAt: Date } | undefined> {
  const updated = await tx
    .updateTable('submissions')
    .set({ status, finished_at: new Date(), error_code: reason?.code ?? null, error_message: reason?.message ?? null })
    .where('id', '=', submissionId)
    .where('status', 'in', ['pending', 'processing'])
    .returning(['meter_point_id', 'created_at'])
    .executeTakeFirst();
  return updated && { meterPointId: updated.meter_point_id, createdAt: updated.created_at };
}

/** Fails every meter still unfinished after the deadline, so none waits forever; the client is told. */
export async function expireStaleSubmissions(deps: { db: Db; boss: PgBoss }, deadlineSeconds: number): Promise<number> {
  const stale = await deps.db
    .selectFrom('submissions')
    .select(['id', 'account_id', 'reference_id', 'mode'])
    .where('status', 'in', ['pending', 'processing'])
    .where('created_at', '<', new Date(Date.now() - deadlineSeconds * 1000))
    .execute();
  let expired = 0;
  for (const submission of stale) {
    const failed = await recordFailure(
      deps,
      {
        submissionId: submission.id,
        accountId: submission.account_id,
        referenceId: submission.reference_id,
        mode: submission.mode,
      },
      { code: 'expired', message: `The meter was not read within ${deadlineSeconds} seconds` },
    );
    if (failed) expired += 1;
  }
  return expired;
}
