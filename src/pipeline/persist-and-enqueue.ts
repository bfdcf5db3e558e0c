import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { PgBoss } from 'pg-boss';
import { bossAdapter, type Db } from '../db/database.ts';
import type { SubmissionMode } from '../db/schema.ts';
import type { CheckedImage } from '../images.ts';
import { upsertMeterPoint } from '../meters/meter-points.ts';
import { keepUpload } from '../photos/meter-photos.ts';
import type { PhotoStore } from '../photos/store.ts';
import { enqueueRead } from '../queue.ts';
import type { AuthenticatedKey } from './authenticate.ts';
import type { ActivePlan } from './check-subscription.ts';
import { releaseUsage, reserveUsage } from './check-usage.ts';
import type { MeterIdentity } from './identify-meter.ts';

export interface StoredSubmission {
  submissionId: string;
  referenceId: string;
  /** The month its request was counted in (usageMonth). */
  usageMonth: string;
}

/**
 * Step 5: the upload is stored where PHOTO_STORE says (in a bucket: before the transaction, so a
 * committed meter always has its photo; an object whose transaction then fails is left to the
 * orphan sweep). Then one transaction stores the submission's row and its photo's row, for async
 * submissions enqueues the read job, and counts the request against the plan. Either all of it is
 * committed or none. A sync meter starts as `processing`: the web process reads it at once.
 *
 * The count comes last: its row lock serialises an account's submissions until COMMIT, and taken
 * first it would also hold them while the upload's bytes are written.
 */
export async function persistAndEnqueue(
  deps: { db: Db; photos: PhotoStore; boss: PgBoss },
  submission: {
    key: AuthenticatedKey;
    plan: ActivePlan;
    image: CheckedImage;
    mode: SubmissionMode;
    identity?: MeterIdentity;
  },
): Promise<StoredSubmission> {
  const { key, plan, image, mode, identity = {} } = submission;
  const referenceId = randomUUID();
  const stored = await keepUpload(deps.photos, referenceId, image.upload);
  return deps.db.transaction().execute(async (tx) => {
    const meterPointId = identity.meterId ? await upsertMeterPoint(tx, key.accountId, identity.meterId) : null;
    // One statement: the meter, its image and the key's last use.
    const submission = await tx
      .with('submission', (db) =>
        db
          .insertInto('submissions')
          .values({
            reference_id: referenceId,
            account_id: key.accountId,
            api_key_id: key.keyId,
            mode,
            status: mode === 'sync' ? 'processing' : 'pending',
            started_at: mode === 'sync' ? new Date() : null,
            error_code: null,
            error_message: null,
            finished_at: null,
            meter_point_id: meterPointId,
            previous_reading: identity.previousReading?.reading ?? null,
            previous_read_at: identity.previousReading?.readAt ?? null,
          })
          .returning(['id', 'reference_id']),
      )
      .with('image', (db) =>
        db
          .insertInto('submission_photos')
          .columns(['submission_id', 'original_format', 'original_bytes', 'upload', 'upload_object'])
          .expression((eb) =>
            eb
              .selectFrom('submission')
              .select((eb) => [
                'submission.id',
                eb.val(image.format).as('original_format'),
                eb.val(image.upload.length).as('original_bytes'),
                eb.val(stored.upload).as('upload'),
                eb.val(stored.upload_object).as('upload_object'),
              ]),
          ),
      )
      // To the minute, so that concurrent submissions with one key do not wait on its row lock.
      .with('key', (db) =>
        db
          .updateTable('api_keys')
          .set({ last_used_at: new Date() })
          .where('id', '=', key.keyId)
          .where((eb) =>
            eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', sql<Date>`now() - interval '1 minute'`)]),
          ),
      )
      .selectFrom('submission')
      .select(['submission.id', 'submission.reference_id'])
      .executeTakeFirstOrThrow();
    if (mode === 'async') await enqueueRead(deps.boss, bossAdapter(tx), { submissionId: submission.id }, key.accountId);
    const usageMonth = await reserveUsage(tx, deps.boss, key.accountId, plan);
    return { submissionId: submission.id, referenceId: submission.reference_id, usageMonth };
  });
}

/**
 * Step 5 undone, for a sync submission whose photos the bucket stopped storing before its read began
 * (its upload stored, its upright JPEG refused): one transaction deletes its rows and takes its count
 * back, so that, like a submission the bucket refused outright, it is neither stored nor counted, and
 * the client's retry with the same Idempotency-Key is read and counted once. The upload's object is
 * left to the orphan sweep (src/photos/sweep.ts): the bucket has just failed. False, and nothing
 * changes, when the submission has finished meanwhile (expired).
 */
export async function withdrawSubmission(db: Db, accountId: string, accepted: StoredSubmission): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const withdrawn = await tx
      .deleteFrom('submissions')
      .where('id', '=', accepted.submissionId)
      .where('status', 'in', ['pending', 'processing'])
      .executeTakeFirst();
    if (withdrawn.numDeletedRows === 0n) return false;
    await releaseUsage(tx, accountId, accepted.usageMonth);
    return true;
  });
}
