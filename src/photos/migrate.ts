import { sql } from 'kysely';
import { jpegName, uploadName, type PhotoDeps } from './meter-photos.ts';

/** Photos moved at a time: a batch is held in memory (a pending upload is up to 10 MB). */
export const MIGRATE_BATCH_SIZE = 20;

export interface MigrateProgress {
  moved: number;
  /** Photos still in the other place when the run started, less those moved since. */
  left: number;
}

interface Row {
  submission_id: string;
  reference_id: string;
  upload: Buffer | null;
  upload_object: string | null;
  jpeg: Buffer | null;
  jpeg_object: string | null;
}

/**
 * `meterlens photos migrate`: moves every stored photo to where `deps.photos` puts new ones (its
 * bucket, or the database), a batch at a time, while the service runs. Each photo is copied, then
 * its row is pointed at the copy only if it still holds the original (the read step may have
 * replaced an upload meanwhile), then the original object, if any, is deleted. Stopped anywhere,
 * a rerun goes on with the photos not yet moved; a copy no row took is deleted here or by the sweep.
 */
export async function migratePhotos(
  deps: PhotoDeps,
  batchSize: number,
  onBatch: (progress: MigrateProgress) => void | Promise<void>,
): Promise<MigrateProgress> {
  const toBucket = deps.photos.bucket !== undefined;
  const notMoved = toBucket
    ? sql<boolean>`(upload IS NOT NULL OR jpeg IS NOT NULL)`
    : sql<boolean>`(upload_object IS NOT NULL OR jpeg_object IS NOT NULL)`;
  const { total } = await deps.db
    .selectFrom('submission_photos')
    .select((eb) => eb.fn.countAll<string>().as('total'))
    .where(notMoved)
    .executeTakeFirstOrThrow();
  const progress = { moved: 0, left: Number(total) };
  let after = '0';
  for (;;) {
    const rows: Row[] = await deps.db
      .selectFrom('submission_photos as i')
      .innerJoin('submissions as m', 'm.id', 'i.submission_id')
      .select(['i.submission_id', 'm.reference_id', 'i.upload', 'i.upload_object', 'i.jpeg', 'i.jpeg_object'])
      .where(notMoved)
      .where('i.submission_id', '>', after)
      .orderBy('i.submission_id')
      .limit(batchSize)
      .execute();
    if (rows.length === 0) return progress;
    const moved = await Promise.all(rows.map((row) => movePhotos(deps, row)));
    const count = moved.filter(Boolean).length;
    progress.moved += count;
    progress.left = Math.max(progress.left - count, 0);
    after = rows.at(-1)!.submission_id;
    await onBatch({ ...progress });
  }
}

/** Moves a row's photo (upload or upright JPEG, whichever it holds); false when the row changed meanwhile. */
async function movePhotos(deps: PhotoDeps, row: Row): Promise<boolean> {
  const isJpeg = row.jpeg !== null || row.jpeg_object !== null;
  const [bytesColumn, objectColumn] = isJpeg
    ? (['jpeg', 'jpeg_object'] as const)
    : (['upload', 'upload_object'] as const);
  const original = { bytes: row[bytesColumn], object: row[objectColumn] };
  const bytes = await deps.photos.get(original);
  // Deleted (by retention, or replaced by its JPEG) since the batch was listed.
  if (!bytes) return false;
  const copy = await deps.photos.put((isJpeg ? jpegName : uploadName)(row.reference_id), bytes);
  const updated = await deps.db
    .updateTable('submission_photos')
    .set({ [bytesColumn]: copy.bytes, [objectColumn]: copy.object })
    .where('submission_id', '=', row.submission_id)
    .where(
      original.object === null
        ? sql<boolean>`${sql.ref(bytesColumn)} IS NOT NULL`
        : sql<boolean>`${sql.ref(objectColumn)} = ${original.object}`,
    )
    .executeTakeFirst();
  const taken = updated.numUpdatedRows > 0n;
  await deps.photos.remove([taken ? original.object : copy.object]);
  return taken;
}
