import type { Db } from '../../src/db/database.ts';
import { upsertMeterPoint } from '../../src/meters/meter-points.ts';
import { refreshNeedsReview } from '../../src/meters/review.ts';
import type { Plausibility } from '../../src/readers/reader.ts';
import type { Customer } from './service.ts';

export interface SeededReading {
  createdAt: Date;
  meterId?: string;
  /** Digits as the dial shows them; the submission is completed with this reading. */
  reading: string;
  plausibility?: Plausibility;
}

/**
 * Completed submissions written straight into the tables, as the read step leaves them (needs_review
 * stored too): lists only read rows, so many of them need no photos. Returns their reference_ids, in
 * the order given. A test that then changes their facts in the tables stores needs_review again
 * with refreshNeedsReview, as the code that changes them does.
 */
export async function seedReadings(
  db: Db,
  customer: Pick<Customer, 'accountId' | 'keyId'>,
  items: SeededReading[],
): Promise<string[]> {
  const points = new Map<string, string>();
  for (const meterId of new Set(items.flatMap((item) => (item.meterId ? [item.meterId] : []))))
    points.set(meterId, await upsertMeterPoint(db, customer.accountId, meterId));
  const meters = await db
    .insertInto('submissions')
    .values(
      items.map((item) => ({
        account_id: customer.accountId,
        api_key_id: customer.keyId,
        mode: 'sync' as const,
        status: 'completed' as const,
        error_code: null,
        error_message: null,
        created_at: item.createdAt,
        started_at: item.createdAt,
        finished_at: item.createdAt,
        meter_point_id: item.meterId ? points.get(item.meterId) : null,
      })),
    )
    .returning(['id', 'reference_id'])
    .execute();
  await db
    .insertInto('readings')
    .values(
      items.map((item, index) => ({
        submission_id: meters[index]!.id,
        reading: item.reading,
        value: item.reading,
        confidence: 97,
        reader: 'seed',
        model: 'seed',
        escalated: false,
        attempts: '[]',
        read_ms: 1,
        plausibility: item.plausibility ?? 'unknown',
      })),
    )
    .execute();
  await refreshNeedsReview(db, { accountId: customer.accountId });
  return meters.map((meter) => meter.reference_id);
}
