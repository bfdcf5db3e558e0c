import type { Db } from '../db/database.ts';
import { isReferenceId } from '../schemas/meter-reading.ts';
import { submissionRecords, type SubmissionRecord } from './records.ts';

/** Who corrects: an API key or a dashboard user, and how to name them in the record. */
export type Corrector = { apiKeyId: string; userId?: undefined; label: string } | { userId: string; apiKeyId?: undefined; label: string };

export type CorrectionOutcome = { outcome: 'corrected'; record: SubmissionRecord } | { outcome: 'not_found' } | { outcome: 'not_finished' };

/**
 * Stores a person's reading of a submitted photo. The machine's reading stays; the newest
 * correction is the billable reading and the meter's next plausibility reference, and puts the
 * photo in `meterlens dataset export`. A correction equal to the machine's reading confirms it.
 * Only finished submissions (completed, or failed: a person may read what the readers could not).
 */
export async function correctReading(db: Db, accountId: string, referenceId: string, reading: string, by: Corrector): Promise<CorrectionOutcome> {
  if (!isReferenceId(referenceId)) return { outcome: 'not_found' };
  const meter = await db
    .selectFrom('meters')
    .select(['id', 'status'])
    .where('account_id', '=', accountId)
    .where('reference_id', '=', referenceId)
    .executeTakeFirst();
  if (!meter) return { outcome: 'not_found' };
  if (meter.status !== 'completed' && meter.status !== 'failed') return { outcome: 'not_finished' };
  await db
    .insertInto('reading_corrections')
    .values({ meter_id: meter.id, reading, value: reading, api_key_id: by.apiKeyId ?? null, user_id: by.userId ?? null, corrected_by: by.label })
    .execute();
  const record = await submissionRecords(db, accountId).where('m.id', '=', meter.id).executeTakeFirstOrThrow();
  return { outcome: 'corrected', record };
}
