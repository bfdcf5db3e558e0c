import type { PgBoss } from 'pg-boss';
import { bossAdapter, type Db } from '../db/database.ts';
import type { MeterMode } from '../db/schema.ts';
import type { NormalisedImage } from '../images.ts';
import { enqueueRead } from '../queue.ts';
import type { AuthenticatedKey } from './authenticate.ts';
import type { ActivePlan } from './check-subscription.ts';
import { reserveUsage } from './check-usage.ts';

export interface AcceptedMeter {
  meterId: string;
  referenceId: string;
}

/**
 * Step 5: one transaction counts the request against the plan, stores the meter row and its image
 * and, for async submissions, enqueues the read job. Either all of it is committed or none.
 * A sync meter starts as `processing`: the web process reads it at once.
 */
export async function persistAndEnqueue(
  deps: { db: Db; boss: PgBoss },
  submission: { key: AuthenticatedKey; plan: ActivePlan; image: NormalisedImage; mode: MeterMode },
): Promise<AcceptedMeter> {
  const { key, plan, image, mode } = submission;
  return deps.db.transaction().execute(async (tx) => {
    await reserveUsage(tx, deps.boss, key.accountId, plan);
    const meter = await tx
      .insertInto('meters')
      .values({
        account_id: key.accountId,
        api_key_id: key.keyId,
        mode,
        status: mode === 'sync' ? 'processing' : 'pending',
        started_at: mode === 'sync' ? new Date() : null,
        error_code: null,
        error_message: null,
        finished_at: null,
      })
      .returning(['id', 'reference_id'])
      .executeTakeFirstOrThrow();
    await tx
      .insertInto('meter_images')
      .values({
        meter_id: meter.id,
        original_format: image.originalFormat,
        original_bytes: image.originalBytes,
        width: image.width,
        height: image.height,
        jpeg: image.jpeg,
      })
      .execute();
    await tx.updateTable('api_keys').set({ last_used_at: new Date() }).where('id', '=', key.keyId).execute();
    if (mode === 'async') await enqueueRead(deps.boss, bossAdapter(tx), { meterId: meter.id });
    return { meterId: meter.id, referenceId: meter.reference_id };
  });
}
