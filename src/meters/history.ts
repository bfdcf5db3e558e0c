import { sql, type SqlBool } from 'kysely';
import type { Db } from '../db/database.ts';
import { findMeterPoint } from './meter-points.ts';
import { submissionRecords, type SubmissionRecord } from './records.ts';

export const HISTORY_MAX_LIMIT = 100;

/** Opaque to clients: the row id the next page starts below. */
export function encodeCursor(submissionId: string): string {
  return Buffer.from(`m${submissionId}`).toString('base64url');
}

/** The row id in a cursor, or undefined when it is not one of ours. */
export function decodeCursor(cursor: string): string | undefined {
  const match = /^m([1-9][0-9]{0,17})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  return match?.[1];
}

/**
 * The submissions of one of the account's meters, newest first by when the meter showed them (a
 * manual reading's read_at may be long past), `limit` of them after the submission `before` (a row
 * id). Undefined when the account has no meter with this id.
 */
export async function meterHistory(
  db: Db,
  accountId: string,
  externalId: string,
  page: { limit: number; before?: string },
): Promise<{ meterPointId: string; records: SubmissionRecord[]; nextBefore: string | null } | undefined> {
  const point = await findMeterPoint(db, accountId, externalId);
  if (!point) return undefined;
  let query = submissionRecords(db, accountId)
    .where('m.meter_point_id', '=', point.id)
    .orderBy('m.created_at', 'desc')
    .orderBy('m.id', 'desc')
    .limit(page.limit + 1);
  if (page.before) {
    const cursorRow = db.selectFrom('submissions').select(['created_at', 'id']).where('id', '=', page.before);
    query = query.where(sql<SqlBool>`(m.created_at, m.id) < (${cursorRow})`);
  }
  const rows = await query.execute();
  const records = rows.slice(0, page.limit);
  return {
    meterPointId: point.id,
    records,
    nextBefore: rows.length > page.limit ? records.at(-1)!.submissionId : null,
  };
}
