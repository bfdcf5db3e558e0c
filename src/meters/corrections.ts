import { sql } from 'kysely';
import { checkBound } from '../accounts/account-bounds.ts';
import type { ServiceDeps } from '../deps.ts';
import { observeAnomalies } from '../metrics.ts';
import { isReferenceId } from '../schemas/meter-reading.ts';
import { queueAccountEvent } from '../webhooks/deliver.ts';
import { type AnomalyKind, checkMeterAnomalies } from './anomalies.ts';
import { checkPersonsLayout } from './meter-points.ts';
import { submissionJson, submissionRecords, type SubmissionRecord } from './records.ts';
import { holdReviewThreshold, refreshNeedsReview } from './review.ts';

/** Who corrects: an API key or a dashboard user, and how to name them in the record. */
export type Corrector =
  | { apiKeyId: string; userId?: undefined; label: string }
  | { userId: string; apiKeyId?: undefined; label: string };

/**
 * What a correction writes to: the database, and the queue its `reading.corrected` webhooks and
 * the anomaly episodes it opens (`meter.anomaly`) go through; the settings those are judged by.
 */
export type CorrectionDeps = Pick<ServiceDeps, 'db' | 'boss' | 'config'>;

/** Corrections one submission may have: a person changes their mind a few times, not hundreds. */
export const CORRECTIONS_PER_SUBMISSION = 20;

export type CorrectionOutcome =
  | { outcome: 'corrected'; record: SubmissionRecord }
  | { outcome: 'not_found' }
  | { outcome: 'not_finished' }
  | { outcome: 'nothing_to_confirm' };

/**
 * Stores a person's reading of a submitted photo. The machine's reading stays; the newest
 * correction is the billable reading and the meter's next plausibility reference, and puts the
 * photo in `meterlens dataset export`. A correction equal to the machine's reading confirms it.
 * Only finished submissions (completed, or failed: a person may read what the readers could not).
 */
export function correctReading(
  deps: CorrectionDeps,
  accountId: string,
  referenceId: string,
  reading: string,
  by: Corrector,
): Promise<Exclude<CorrectionOutcome, { outcome: 'nothing_to_confirm' }>> {
  // A correction brings its own reading, so there is always one to store.
  return storeCorrection(deps, accountId, referenceId, by, () => reading) as Promise<
    Exclude<CorrectionOutcome, { outcome: 'nothing_to_confirm' }>
  >;
}

/**
 * A person confirms the machine's reading: a correction equal to it (so the newest correction still
 * counts, and a later correction can override it). needs_review becomes false, and a reading that
 * was flagged (`implausible`, `suspicious`) becomes the meter's reference: a meter whose reference
 * was wrong is released. A failed submission has no reading to confirm.
 */
export function confirmReading(
  deps: CorrectionDeps,
  accountId: string,
  referenceId: string,
  by: Corrector,
): Promise<CorrectionOutcome> {
  return storeCorrection(deps, accountId, referenceId, by, (machineReading) => machineReading);
}

/**
 * The correction, needs_review stored again (false now), and the `reading.corrected` event to the
 * account's endpoints that chose it, all in one transaction: its data is the submission as GET
 * shows it, the machine's reading (or error) with the person's `correction` beside it.
 */
async function storeCorrection(
  deps: CorrectionDeps,
  accountId: string,
  referenceId: string,
  by: Corrector,
  readingOf: (machineReading: string | undefined) => string | undefined,
): Promise<CorrectionOutcome> {
  if (!isReferenceId(referenceId)) return { outcome: 'not_found' };
  let anomalies: AnomalyKind[] = [];
  const outcome = await deps.db.transaction().execute(async (tx): Promise<CorrectionOutcome> => {
    await holdReviewThreshold(tx, accountId);
    // The submission's row stays locked until the correction is stored, so that concurrent
    // corrections of it are counted one after another and the bound holds exactly.
    const meter = await tx
      .selectFrom('submissions as m')
      .leftJoin('readings as r', 'r.submission_id', 'm.id')
      .leftJoin('meter_points as p', 'p.id', 'm.meter_point_id')
      .select(['m.id', 'm.status', 'm.meter_point_id', 'p.external_id', 'r.reading'])
      .where('m.account_id', '=', accountId)
      .where('m.reference_id', '=', referenceId)
      .forNoKeyUpdate('m')
      .executeTakeFirst();
    if (!meter) return { outcome: 'not_found' };
    if (meter.status !== 'completed' && meter.status !== 'failed') return { outcome: 'not_finished' };
    const reading = readingOf(meter.reading ?? undefined);
    if (!reading) return { outcome: 'nothing_to_confirm' };
    // A confirmation may release a reading flagged for its layout (a replaced meter); a correction is typed.
    if (reading !== meter.reading && meter.meter_point_id && meter.external_id)
      await checkPersonsLayout(tx, { id: meter.meter_point_id, externalId: meter.external_id }, reading, meter.id);
    const { count } = await tx
      .selectFrom('reading_corrections')
      .select(sql<number>`count(*)::int`.as('count'))
      .where('submission_id', '=', meter.id)
      .executeTakeFirstOrThrow();
    checkBound(
      count,
      CORRECTIONS_PER_SUBMISSION,
      'corrections',
      `This submission has ${CORRECTIONS_PER_SUBMISSION} corrections, the most one may have`,
    );
    await tx
      .insertInto('reading_corrections')
      .values({
        submission_id: meter.id,
        reading,
        value: reading,
        api_key_id: by.apiKeyId ?? null,
        user_id: by.userId ?? null,
        corrected_by: by.label,
      })
      .execute();
    await refreshNeedsReview(tx, { submissionId: meter.id });
    // The corrected or confirmed value is the submission's trusted value now.
    if (meter.meter_point_id) anomalies = await checkMeterAnomalies(tx, deps, meter.meter_point_id);
    const record = await submissionRecords(tx, accountId).where('m.id', '=', meter.id).executeTakeFirstOrThrow();
    await queueAccountEvent(tx, deps.boss, {
      accountId,
      type: 'reading.corrected',
      data: submissionJson(record),
      submissionId: meter.id,
    });
    return { outcome: 'corrected', record };
  });
  observeAnomalies(anomalies);
  return outcome;
}
