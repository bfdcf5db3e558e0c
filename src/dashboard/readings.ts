import type { Db } from '../db/database.ts';
import type { MeterStatus } from '../db/schema.ts';
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
    .leftJoin('meter_images as i', 'i.meter_id', 'm.id')
    .select([
      'm.mode',
      'm.error_code as errorCode',
      'm.error_message as errorMessage',
      'm.finished_at as finishedAt',
      'm.image_removed_at as imageRemovedAt',
      'r.value',
      'r.escalated',
      'r.read_ms as readMs',
      'r.counter_box as counterBox',
      'i.width',
      'i.height',
    ])
    .where('m.reference_id', '=', referenceId)
    .executeTakeFirst();
}

/** The normalised upright JPEG of one of the account's submissions, once the read step has made it. */
export async function readingPhoto(db: Db, accountId: string, referenceId: string): Promise<Buffer | undefined> {
  if (!isReferenceId(referenceId)) return undefined;
  const row = await db
    .selectFrom('meter_images as i')
    .innerJoin('meters as m', 'm.id', 'i.meter_id')
    .select('i.jpeg')
    .where('m.account_id', '=', accountId)
    .where('m.reference_id', '=', referenceId)
    .executeTakeFirst();
  return row?.jpeg ?? undefined;
}

export function parseMeterStatus(value: unknown): MeterStatus | undefined {
  return METER_STATUSES.find((status) => status === value);
}

function submissions(db: Db, accountId: string) {
  return db
    .selectFrom('meters as m')
    .leftJoin('readings as r', 'r.meter_id', 'm.id')
    .leftJoin('meter_points as p', 'p.id', 'm.meter_point_id')
    .innerJoin('api_keys as k', 'k.id', 'm.api_key_id')
    .select([
      'p.external_id as meterId',
      'm.reference_id as referenceId',
      'm.created_at as createdAt',
      'm.status',
      'r.reading',
      'r.confidence',
      'r.model',
      'k.project_name as keyProject',
      'k.display_prefix as keyPrefix',
      'k.display_suffix as keySuffix',
    ])
    .where('m.account_id', '=', accountId);
}
