import type { Db } from '../db/database.ts';
import type { NormalisedImage } from '../images.ts';
import type { PhotoStore } from './store.ts';

/** The parts a photo's reader or writer needs. */
export interface PhotoDeps {
  db: Db;
  photos: PhotoStore;
}

/** A meter's photos as the read step takes them: the upright JPEG once made, else the upload. */
export interface MeterPhoto {
  jpeg: Buffer | null;
  upload: Buffer | null;
}

/** The object names under PHOTO_STORE's prefix: one folder a submission. */
export const uploadName = (referenceId: string) => `${referenceId}/upload`;
export const jpegName = (referenceId: string) => `${referenceId}/upright.jpg`;

/**
 * A new submission's upload, stored before its submission's row is written (so a queued job always finds
 * it): the submission_photos columns that say where it is.
 */
export async function keepUpload(
  photos: PhotoStore,
  referenceId: string,
  upload: Buffer,
): Promise<{ upload: Buffer | null; upload_object: string | null }> {
  const place = await photos.put(uploadName(referenceId), upload);
  return { upload: place.bytes, upload_object: place.object };
}

/** The photo the read step starts from; undefined when the meter has none (its row is gone). */
export async function loadPhoto(deps: PhotoDeps, submissionId: string): Promise<MeterPhoto | undefined> {
  const row = await deps.db
    .selectFrom('submission_photos')
    .select(['jpeg', 'jpeg_object', 'upload', 'upload_object'])
    .where('submission_id', '=', submissionId)
    .executeTakeFirst();
  if (!row) return undefined;
  if (row.jpeg || row.jpeg_object) return { jpeg: await mustGet(deps.photos, row.jpeg, row.jpeg_object), upload: null };
  return { jpeg: null, upload: await mustGet(deps.photos, row.upload, row.upload_object) };
}

/** The upright JPEG of a meter; undefined until the read step has made it, or once retention removed it. */
export async function loadJpeg(deps: PhotoDeps, submissionId: string): Promise<Buffer | undefined> {
  const row = await deps.db
    .selectFrom('submission_photos')
    .select(['jpeg', 'jpeg_object'])
    .where('submission_id', '=', submissionId)
    .executeTakeFirst();
  return row && deps.photos.get({ bytes: row.jpeg, object: row.jpeg_object });
}

/**
 * The upright JPEG replaces the upload: stored first, then the row points at it and forgets the
 * upload, whose object is deleted last. A crash before the update leaves the JPEG's object for the
 * retried job to overwrite; one after it leaves the upload's object to the orphan sweep.
 */
export async function keepNormalised(deps: PhotoDeps, submissionId: string, image: NormalisedImage): Promise<void> {
  const meter = await deps.db
    .selectFrom('submissions')
    .select('reference_id')
    .where('id', '=', submissionId)
    .executeTakeFirstOrThrow();
  const place = await deps.photos.put(jpegName(meter.reference_id), image.jpeg);
  const replaced = await deps.db.transaction().execute(async (tx) => {
    const before = await tx
      .selectFrom('submission_photos')
      .select('upload_object')
      .where('submission_id', '=', submissionId)
      .forUpdate()
      .executeTakeFirst();
    await tx
      .updateTable('submission_photos')
      .set({
        jpeg: place.bytes,
        jpeg_object: place.object,
        width: image.width,
        height: image.height,
        upload: null,
        upload_object: null,
      })
      .where('submission_id', '=', submissionId)
      .execute();
    return before?.upload_object ?? null;
  });
  // The reading goes on if this fails: the sweep deletes an object no row points at.
  await deps.photos.remove([replaced]).catch(() => {});
}

async function mustGet(photos: PhotoStore, bytes: Buffer | null, object: string | null): Promise<Buffer> {
  const photo = await photos.get({ bytes, object });
  if (!photo) throw new Error(`the photo ${object} is missing from the store`);
  return photo;
}
