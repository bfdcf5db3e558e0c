import { sql } from 'kysely';
import type { Db } from './db/database.ts';
import type { PhotoDeps } from './photos/meter-photos.ts';

/** Rows one statement deletes: short transactions that never hold many locks or much WAL. */
const PURGE_BATCH_SIZE = 200;

/**
 * The scheduled purge (every 10 minutes): photos older than IMAGE_RETENTION_DAYS and finished
 * webhook deliveries (with their attempts) older than WEBHOOK_RETENTION_DAYS. 0 keeps forever.
 * pg-boss deletes its own finished jobs (FINISHED_JOB_RETENTION_DAYS, see queue.ts).
 */
export async function purgeOldData(
  deps: PhotoDeps,
  retention: { imageRetentionDays: number; webhookRetentionDays: number },
): Promise<{ images: number; deliveries: number }> {
  return {
    images: await inBatches(retention.imageRetentionDays, (cutoff) => deleteImageBatch(deps, cutoff)),
    deliveries: await inBatches(retention.webhookRetentionDays, (cutoff) => deleteDeliveryBatch(deps.db, cutoff)),
  };
}

async function inBatches(retentionDays: number, deleteBatch: (cutoff: Date) => Promise<number>): Promise<number> {
  if (retentionDays <= 0) return 0;
  const cutoff = new Date(Date.now() - retentionDays * 86_400_000);
  let deleted = 0;
  for (;;) {
    const count = await deleteBatch(cutoff);
    deleted += count;
    if (count < PURGE_BATCH_SIZE) return deleted;
  }
}

/**
 * Deletes the photos of finished submissions made before the cutoff, oldest first, and marks
 * their meters; meters and readings stay. Meter ids grow with time, so the scan along
 * submission_photos' primary key stops at the first photo that is young enough.
 *
 * The rows go first, then their objects in the bucket: a photo is never shown from a row whose
 * object is gone. A crash or an outage between the two leaves objects no row points at, which
 * the orphan sweep deletes; while the bucket cannot be reached the purge stops there.
 */
async function deleteImageBatch(deps: PhotoDeps, cutoff: Date): Promise<number> {
  const result = await sql<{ upload_object: string | null; jpeg_object: string | null }>`
    WITH expired AS (
      SELECT i.submission_id FROM submission_photos i JOIN submissions m ON m.id = i.submission_id
      WHERE m.created_at < ${cutoff} AND m.status IN ('completed', 'failed')
      ORDER BY i.submission_id LIMIT ${PURGE_BATCH_SIZE}
    ), removed AS (
      DELETE FROM submission_photos WHERE submission_id IN (SELECT submission_id FROM expired) RETURNING submission_id, upload_object, jpeg_object
    ), marked AS (
      UPDATE submissions SET image_removed_at = now() WHERE id IN (SELECT submission_id FROM removed)
    )
    SELECT upload_object, jpeg_object FROM removed`.execute(deps.db);
  await deps.photos.remove(result.rows.flatMap((row) => [row.upload_object, row.jpeg_object]));
  return result.rows.length;
}

async function deleteDeliveryBatch(db: Db, cutoff: Date): Promise<number> {
  const result = await db
    .deleteFrom('webhook_deliveries')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('status', '<>', 'pending')
        .where('created_at', '<', cutoff)
        .limit(PURGE_BATCH_SIZE),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
