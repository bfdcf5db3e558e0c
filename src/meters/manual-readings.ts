import type { ServiceDeps } from '../deps.ts';
import type { AuthenticatedKey } from '../pipeline/authenticate.ts';
import { observeAnomalies } from '../metrics.ts';
import { type AnomalyKind, checkMeterAnomalies } from './anomalies.ts';
import { checkPersonsLayout, meterPointWithinBound } from './meter-points.ts';
import { submissionRecords, type SubmissionRecord } from './records.ts';

/** The reader and model a manual reading is recorded under: its `model` in every representation. */
export const MANUAL = 'manual';

/**
 * A reading a person took without a photo (or another system holds): a submission of mode `manual`
 * whose time (created_at) is when the meter showed it, completed at once with a reading at
 * confidence 100. It is a person's value: trusted as a reference, needs no review, in the history
 * and the chart; not judged against a window (a meter may have been replaced), not counted as usage,
 * and announced by no reading webhook. As a trusted value it may open or close an anomaly episode.
 */
export async function addManualReading(
  deps: Pick<ServiceDeps, 'db' | 'boss' | 'config'>,
  key: AuthenticatedKey,
  externalId: string,
  reading: string,
  readAt: Date,
): Promise<SubmissionRecord> {
  let anomalies: AnomalyKind[] = [];
  const record = await deps.db.transaction().execute(async (tx) => {
    const meterPointId = await meterPointWithinBound(tx, key.accountId, externalId);
    await checkPersonsLayout(tx, { id: meterPointId, externalId }, reading);
    const finishedAt = new Date();
    const meter = await tx
      .insertInto('submissions')
      .values({
        account_id: key.accountId,
        api_key_id: key.keyId,
        mode: 'manual',
        status: 'completed',
        created_at: readAt,
        started_at: finishedAt,
        finished_at: finishedAt,
        error_code: null,
        error_message: null,
        meter_point_id: meterPointId,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await tx
      .insertInto('readings')
      .values({
        submission_id: meter.id,
        reading,
        value: reading,
        confidence: 100,
        reader: MANUAL,
        model: MANUAL,
        escalated: false,
        attempts: '[]',
        read_ms: 0,
        plausibility: 'unknown',
      })
      .execute();
    anomalies = await checkMeterAnomalies(tx, deps, meterPointId);
    return submissionRecords(tx, key.accountId).where('m.id', '=', meter.id).executeTakeFirstOrThrow();
  });
  observeAnomalies(anomalies);
  return record;
}
