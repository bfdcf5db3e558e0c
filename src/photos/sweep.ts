import { sql } from 'kysely';
import type { PhotoDeps } from './meter-photos.ts';

/**
 * An object younger than this may belong to a submission whose transaction has not committed yet
 * (its upload is stored first) or to `meterlens photos migrate` about to point a row at it. Both
 * take seconds; an hour leaves room for a stalled database.
 */
export const ORPHAN_MIN_AGE_MS = 60 * 60 * 1000;

/**
 * The orphan sweep (with the scheduled purge, every 10 minutes): deletes every object under
 * PHOTO_STORE's prefix older than ORPHAN_MIN_AGE_MS that no submission_photos row points at: uploads
 * whose transaction rolled back or whose process died before COMMIT, uploads of sync submissions
 * withdrawn when the bucket refused their JPEG (withdrawSubmission), uploads replaced by their
 * upright JPEG, photos retention or a deleted account removed the rows of before their objects
 * went. Nothing to do with `PHOTO_STORE=database`. Returns how many it deleted.
 */
export async function sweepOrphanPhotos(deps: PhotoDeps, minAgeMs = ORPHAN_MIN_AGE_MS): Promise<number> {
  let swept = 0;
  for await (const objects of deps.photos.listOlderThan(new Date(Date.now() - minAgeMs))) {
    if (objects.length === 0) continue;
    const { rows } = await sql<{ object: string }>`
      SELECT object FROM unnest(${objects}::text[]) AS listed (object)
      WHERE NOT EXISTS (SELECT 1 FROM submission_photos WHERE upload_object = listed.object)
        AND NOT EXISTS (SELECT 1 FROM submission_photos WHERE jpeg_object = listed.object)`.execute(deps.db);
    await deps.photos.remove(rows.map((row) => row.object));
    swept += rows.length;
  }
  return swept;
}
