import { sql } from 'kysely';
import type { Db } from './db/database.ts';
import type { MeterStatus } from './db/schema.ts';
import { DomainError } from './errors.ts';
import { submissionJson, submissionRecord, submissionRecords } from './meters/records.ts';
import { isReferenceId, type MeterResult } from './schemas/meter-reading.ts';

export interface MeterListFilter {
  status?: MeterStatus;
  createdAfter?: Date;
  limit: number;
  /** reference_id of the last submission of the previous page. */
  startingAfter?: string;
}

/** One of the account's submissions; a reference that is malformed or another account's is not found. */
export async function meterResult(db: Db, accountId: string, referenceId: string): Promise<MeterResult> {
  const row = isReferenceId(referenceId) ? await submissionRecord(db, accountId, referenceId) : undefined;
  if (!row) throw new DomainError('not_found', 'reference_id', `No submission with reference ${JSON.stringify(referenceId)}`);
  return submissionJson(row);
}

/** The account's submissions, newest first, a page at a time: keyset pagination on (created_at, id). */
export async function meterResults(
  db: Db,
  accountId: string,
  filter: MeterListFilter,
): Promise<{ data: MeterResult[]; has_more: boolean; next_cursor: string | null }> {
  let query = submissionRecords(db, accountId)
    .orderBy('m.created_at', 'desc')
    .orderBy('m.id', 'desc')
    .limit(filter.limit + 1);
  if (filter.status) query = query.where('m.status', '=', filter.status);
  if (filter.createdAfter) query = query.where('m.created_at', '>', filter.createdAfter);
  if (filter.startingAfter) {
    const cursor = await db
      .selectFrom('meters')
      .select('id')
      .where('account_id', '=', accountId)
      .where('reference_id', '=', filter.startingAfter)
      .executeTakeFirst();
    if (!cursor) throw new DomainError('invalid', 'starting_after', 'No submission of this account has this reference_id');
    // Compared in SQL: created_at has microseconds, which a JavaScript Date would round away.
    query = query.where(sql<boolean>`(m.created_at, m.id) < (SELECT created_at, id FROM meters WHERE id = ${cursor.id})`);
  }
  const rows = await query.execute();
  const page = rows.slice(0, filter.limit).map(submissionJson);
  const last = page.at(-1);
  const hasMore = rows.length > filter.limit && last !== undefined;
  return { data: page, has_more: hasMore, next_cursor: hasMore ? last.reference_id : null };
}
