import type { Db } from '../db/database.ts';
import type { MeterStatus } from '../db/schema.ts';
import { submissionRecords } from '../meters/records.ts';
import { loadJpeg, type PhotoDeps } from '../photos/meter-photos.ts';
import { isReferenceId } from '../schemas/meter-reading.ts';

export const METER_STATUSES: readonly MeterStatus[] = ['pending', 'processing', 'completed', 'failed'];
const RECENT_LIMIT = 100;

/** The account's most recent submissions, newest first, optionally of one status. */
export async function recentReadings(db: Db, accountId: string, status: MeterStatus | undefined) {
  let query = submissions(db, accountId).orderBy('m.created_at', 'desc').orderBy('m.id', 'desc').limit(RECENT_LIMIT);
  if (status) query = query.where('m.status', '=', status);
  return query.execute();
}

/** One submission with what the detail view shows; undefined when the account has no such reference. */
export async function readingDetail(db: Db, accountId: string, referenceId: string) {
  if (!isReferenceId(referenceId)) return undefined;
  return submissions(db, accountId)
    .select(['m.mode', 'm.image_removed_at as imageRemovedAt', 'r.read_ms as readMs'])
    .where('m.reference_id', '=', referenceId)
    .executeTakeFirst();
}

/** The normalised upright JPEG of one of the account's submissions, once the read step has made it. */
export async function readingPhoto(deps: PhotoDeps, accountId: string, referenceId: string): Promise<Buffer | undefined> {
  if (!isReferenceId(referenceId)) return undefined;
  const meter = await deps.db.selectFrom('meters').select('id').where('account_id', '=', accountId).where('reference_id', '=', referenceId).executeTakeFirst();
  return meter && loadJpeg(deps, meter.id);
}

export function parseMeterStatus(value: unknown): MeterStatus | undefined {
  return METER_STATUSES.find((status) => status === value);
}

/** Submissions as the API represents them (submissionRecords), with the key that sent each. */
function submissions(db: Db, accountId: string) {
  return submissionRecords(db, accountId)
    .innerJoin('api_keys as k', 'k.id', 'm.api_key_id')
    .select(['k.project_name as keyProject', 'k.display_prefix as keyPrefix', 'k.display_suffix as keySuffix']);
}
