import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { AnomalyJson } from './anomalies.ts';
import { CONSUMPTION_DAYS, consumption, trustedSubmissions } from './consumption.ts';
import { meterWaitingCount } from './review.ts';

export const METER_LIST_MAX_LIMIT = 100;

/**
 * A physical meter as the lists show it: its last trusted reading, its consumption over the last 30
 * days, how many of its submissions wait for review, and whether it needs a visit.
 */
export interface MeterSummary {
  meterId: string;
  createdAt: Date;
  lastTrusted: {
    reading: string;
    value: number;
    source: 'correction' | 'reading' | 'manual';
    readAt: Date;
    referenceId: string;
  } | null;
  /** m³; null without a trusted reading in the 30 days or before them. */
  consumption30Days: number | null;
  /** Its submissions with needs_review, all of them: what `needs_review=true&meter_id=…` lists. */
  waitingForReview: number;
  /** Its newest open anomaly episode (src/meters/anomalies.ts), if any. */
  anomaly: AnomalyJson | null;
}

/** Byte order, as the index meter_points_account_external_c has it, whatever the database's collation. */
const externalIdBytes = sql<string>`p.external_id COLLATE "C"`;

/**
 * The account's meters in meter_id order (byte by byte), a page at a time after the meter_id
 * `startingAfter`, optionally only those whose meter_id starts with `prefix`.
 */
export async function meterList(
  db: Db,
  accountId: string,
  page: { limit: number; startingAfter?: string; prefix?: string },
): Promise<{ meters: MeterSummary[]; nextCursor: string | null }> {
  const since = new Date(Date.now() - CONSUMPTION_DAYS * 86_400_000);
  let query = db
    .selectFrom('meter_points as p')
    .leftJoinLateral(
      () =>
        trustedSubmissions(db, sql.ref('p.id'))
          .orderBy('m.created_at', 'desc')
          .orderBy('m.id', 'desc')
          .limit(1)
          .as('last'),
      (join) => join.onTrue(),
    )
    .leftJoinLateral(
      () =>
        trustedSubmissions(db, sql.ref('p.id'))
          .where('m.created_at', '<', since)
          .orderBy('m.created_at', 'desc')
          .orderBy('m.id', 'desc')
          .limit(1)
          .as('before'),
      (join) => join.onTrue(),
    )
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('meter_anomalies')
          .select('data')
          .whereRef('meter_point_id', '=', 'p.id')
          .where('closed_at', 'is', null)
          .orderBy('opened_at', 'desc')
          .orderBy('id', 'desc')
          .limit(1)
          .as('anomaly'),
      (join) => join.onTrue(),
    )
    .select([
      'p.external_id as meterId',
      'p.created_at as createdAt',
      'last.reading',
      'last.value',
      'last.source',
      'last.readAt',
      'last.referenceId',
      'before.value as valueBefore',
      'anomaly.data as anomaly',
      meterWaitingCount(sql.ref('p.id')).as('waitingForReview'),
    ])
    .where('p.account_id', '=', accountId)
    .orderBy(externalIdBytes)
    .limit(page.limit + 1);
  if (page.startingAfter) query = query.where(externalIdBytes, '>', page.startingAfter);
  if (page.prefix) query = query.where(externalIdBytes, 'like', `${page.prefix.replace(/[\\%_]/g, '\\$&')}%`);
  const rows = await query.execute();
  const meters = rows.slice(0, page.limit).map((row) => ({
    meterId: row.meterId,
    createdAt: row.createdAt,
    lastTrusted:
      row.reading === null ||
      row.value === null ||
      row.source === null ||
      row.readAt === null ||
      row.referenceId === null
        ? null
        : {
            reading: row.reading,
            value: Number(row.value),
            source: row.source,
            readAt: row.readAt,
            referenceId: row.referenceId,
          },
    consumption30Days: row.readAt && row.readAt >= since ? consumption(row.value, row.valueBefore) : null,
    waitingForReview: row.waitingForReview,
    anomaly: row.anomaly,
  }));
  return { meters, nextCursor: rows.length > page.limit ? meters.at(-1)!.meterId : null };
}
