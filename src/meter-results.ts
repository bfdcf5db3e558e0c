import { sql } from 'kysely';
import type { Db } from './db/database.ts';
import type { MeterStatus } from './db/schema.ts';
import { DomainError } from './errors.ts';
import { storedPlausibilityColumns, storedPlausibilityJson } from './pipeline/plausibility.ts';
import { readingResult } from './pipeline/reading-result.ts';
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
  const row = isReferenceId(referenceId)
    ? await results(db, accountId).where('m.reference_id', '=', referenceId).executeTakeFirst()
    : undefined;
  if (!row) throw new DomainError('not_found', 'reference_id', `No submission with reference ${JSON.stringify(referenceId)}`);
  return toMeterResult(row);
}

/** The account's submissions, newest first, a page at a time: keyset pagination on (created_at, id). */
export async function meterResults(db: Db, accountId: string, filter: MeterListFilter): Promise<{ data: MeterResult[]; has_more: boolean; next_cursor: string | null }> {
  let query = results(db, accountId).orderBy('m.created_at', 'desc').orderBy('m.id', 'desc').limit(filter.limit + 1);
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
  const page = rows.slice(0, filter.limit).map(toMeterResult);
  const last = page.at(-1);
  const hasMore = rows.length > filter.limit && last !== undefined;
  return { data: page, has_more: hasMore, next_cursor: hasMore ? last.reference_id : null };
}

function results(db: Db, accountId: string) {
  return db
    .selectFrom('meters as m')
    .leftJoin('readings as r', 'r.meter_id', 'm.id')
    .leftJoin('meter_images as i', 'i.meter_id', 'm.id')
    .leftJoin('meter_points as p', 'p.id', 'm.meter_point_id')
    .select([
      'p.external_id as meter_id',
      ...storedPlausibilityColumns,
      'm.reference_id',
      'm.status',
      'm.created_at',
      'm.finished_at',
      'm.error_code',
      'm.error_message',
      'r.id as reading_id',
      'r.reading',
      'r.value',
      'r.confidence',
      'r.escalated',
      'r.model',
      'r.digit_confidences',
      'r.counter_box',
      'i.width',
      'i.height',
    ])
    .where('m.account_id', '=', accountId);
}

type ResultRow = Awaited<ReturnType<ReturnType<typeof results>['executeTakeFirstOrThrow']>>;

function toMeterResult(row: ResultRow): MeterResult {
  const submission = {
    reference_id: row.reference_id,
    status: row.status,
    created_at: row.created_at.toISOString(),
    finished_at: row.finished_at?.toISOString() ?? null,
  };
  if (row.status === 'failed') return { ...submission, error: { code: row.error_code ?? 'unknown', message: row.error_message ?? '' } };
  if (row.status !== 'completed' || row.reading_id === null) return submission;
  return {
    ...submission,
    ...readingResult({
      readingId: row.reading_id,
      reading: row.reading!,
      value: row.value!,
      confidence: row.confidence!,
      escalated: row.escalated!,
      model: row.model!,
      digitConfidences: row.digit_confidences,
      counterBox: row.counter_box,
      frame: row.width && row.height ? { width: row.width, height: row.height } : null,
    }),
    meter_id: row.meter_id,
    plausibility: storedPlausibilityJson(row) ?? undefined,
  };
}
