import type { Tx } from '../db/database.ts';
import type { ServiceDeps } from '../deps.ts';
import { DomainError } from '../errors.ts';
import type { AuthenticatedKey } from '../pipeline/authenticate.ts';
import { observeAnomalies } from '../metrics.ts';
import { type AnomalyKind, checkMeterAnomalies } from './anomalies.ts';
import { meterPointWithinBound } from './meter-points.ts';
import { FLAGGED } from './review.ts';
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
    await checkLayout(tx, meterPointId, externalId, reading);
    const finishedAt = new Date();
    const meter = await tx
      .insertInto('meters')
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
        meter_id: meter.id,
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

/** Whole and fractional digits of a reading: a meter's layout, e.g. "00123.456" → 5 + 3. */
export function readingLayout(reading: string): { whole: number; fraction: number } {
  const [whole = '', fraction = ''] = reading.split('.');
  return { whole: whole.length, fraction: fraction.length };
}

/**
 * A manual reading has the layout of the meter's newest trusted value (a correction, a manual
 * reading, a reading nobody flagged): one with a digit more or less is a typo, or another meter.
 */
async function checkLayout(tx: Tx, meterPointId: string, externalId: string, reading: string): Promise<void> {
  const known = await tx
    .selectFrom('meters as m')
    .innerJoin('readings as r', 'r.meter_id', 'm.id')
    .leftJoinLateral(
      (eb) => eb.selectFrom('reading_corrections').select('reading').whereRef('meter_id', '=', 'm.id').orderBy('id', 'desc').limit(1).as('c'),
      (join) => join.onTrue(),
    )
    .select(['r.reading', 'c.reading as corrected'])
    .where('m.meter_point_id', '=', meterPointId)
    .where((eb) => eb.or([eb('c.reading', 'is not', null), eb('r.plausibility', 'not in', [...FLAGGED])]))
    .orderBy('m.created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!known) return;
  const trusted = known.corrected ?? known.reading;
  const expected = readingLayout(trusted);
  const given = readingLayout(reading);
  if (expected.whole === given.whole && expected.fraction === given.fraction) return;
  throw new DomainError(
    'invalid',
    'reading',
    `Meter ${externalId} shows ${expected.whole} whole and ${expected.fraction} fractional digits (like ${trusted}); this reading has ${given.whole} and ${given.fraction}`,
  );
}
