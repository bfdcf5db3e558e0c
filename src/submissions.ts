import { type Expression, type SqlBool, sql } from 'kysely';
import type { Db } from './db/database.ts';
import type { SubmissionStatus } from './db/schema.ts';
import { DomainError } from './errors.ts';
import { submissionJson, submissionRecord, submissionRecords } from './meters/records.ts';
import { storedNeedsReview } from './meters/review.ts';
import type { Plausibility } from './readers/reader.ts';
import { isReferenceId, type Submission } from './schemas/meter-reading.ts';

/** Which of the account's submissions a list shows; every field narrows it. */
export interface SubmissionFilter {
  status?: SubmissionStatus;
  plausibility?: Plausibility;
  /** Finished submissions whose needs_review is this. */
  needsReview?: boolean;
  /** The client's meter_id. */
  meterId?: string;
  /** Bounds on created_at: exclusive, and the dashboard's inclusive start of a day. */
  createdAfter?: Date;
  createdBefore?: Date;
  createdFrom?: Date;
}

/**
 * The filter as conditions on a query of `submissions as m` left-joined with `readings as r`: one line per
 * filter, shared by the API's list, the dashboard's list and its count.
 */
export function filterConditions(accountId: string, filter: SubmissionFilter): Array<Expression<SqlBool>> {
  const { status, plausibility, needsReview, meterId, createdAfter, createdBefore, createdFrom } = filter;
  const conditions = [
    status && sql<SqlBool>`m.status = ${status}`,
    plausibility && sql<SqlBool>`r.plausibility = ${plausibility}`,
    needsReview !== undefined &&
      sql<SqlBool>`m.status IN ('completed', 'failed') AND ${needsReview ? storedNeedsReview : sql`NOT ${storedNeedsReview}`}`,
    meterId &&
      sql<SqlBool>`m.meter_point_id = (SELECT id FROM meter_points WHERE account_id = ${accountId} AND external_id = ${meterId})`,
    createdAfter && sql<SqlBool>`m.created_at > ${createdAfter}`,
    createdBefore && sql<SqlBool>`m.created_at < ${createdBefore}`,
    createdFrom && sql<SqlBool>`m.created_at >= ${createdFrom}`,
  ];
  return conditions.filter((condition) => typeof condition === 'object');
}

/** The account's submissions under the filter, each as submissionRecords gives it, in no order. */
export function filteredSubmissions(db: Db, accountId: string, filter: SubmissionFilter) {
  return filterConditions(accountId, filter).reduce(
    (query, condition) => query.where(condition),
    submissionRecords(db, accountId),
  );
}

/** How many of the account's submissions the filter matches (an index range, without the records' joins). */
export async function countSubmissions(db: Db, accountId: string, filter: SubmissionFilter): Promise<number> {
  const { count } = await filterConditions(accountId, filter)
    .reduce(
      (query, condition) => query.where(condition),
      db
        .selectFrom('submissions as m')
        .leftJoin('readings as r', 'r.submission_id', 'm.id')
        .where('m.account_id', '=', accountId),
    )
    .select(sql<number>`count(*)::int`.as('count'))
    .executeTakeFirstOrThrow();
  return count;
}

/**
 * The keyset condition of the page after `startingAfter` (a reference_id), newest first on
 * (created_at, id). An unknown reference is a 422 `field`.
 */
export async function keysetAfter(
  db: Db,
  accountId: string,
  referenceId: string,
  field: string,
): Promise<Expression<SqlBool>> {
  const cursor = isReferenceId(referenceId)
    ? await db
        .selectFrom('submissions')
        .select('id')
        .where('account_id', '=', accountId)
        .where('reference_id', '=', referenceId)
        .executeTakeFirst()
    : undefined;
  if (!cursor) throw new DomainError('invalid', field, 'No submission of this account has this reference_id');
  // Compared in SQL: created_at has microseconds, which a JavaScript Date would round away.
  return sql<SqlBool>`(m.created_at, m.id) < (SELECT created_at, id FROM submissions WHERE id = ${cursor.id})`;
}

/** A page of rows fetched with `limit + 1`: the extra row only says that there are more. */
export function pageOf<T extends { referenceId: string }>(
  rows: T[],
  limit: number,
): { page: T[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  return { page, nextCursor: rows.length > limit ? page.at(-1)!.referenceId : null };
}

/** One of the account's submissions; a reference that is malformed or another account's is not found. */
export async function findSubmission(db: Db, accountId: string, referenceId: string): Promise<Submission> {
  const row = isReferenceId(referenceId) ? await submissionRecord(db, accountId, referenceId) : undefined;
  if (!row)
    throw new DomainError('not_found', 'reference_id', `No submission with reference ${JSON.stringify(referenceId)}`);
  return submissionJson(row);
}

/**
 * The account's submissions under the filter, newest first, a page at a time: keyset pagination on (created_at, id).
 */
export async function listSubmissions(
  db: Db,
  accountId: string,
  filter: SubmissionFilter,
  page: { limit: number; startingAfter?: string },
): Promise<{ data: Submission[]; has_more: boolean; next_cursor: string | null }> {
  let query = filteredSubmissions(db, accountId, filter)
    .orderBy('m.created_at', 'desc')
    .orderBy('m.id', 'desc')
    .limit(page.limit + 1);
  if (page.startingAfter) query = query.where(await keysetAfter(db, accountId, page.startingAfter, 'starting_after'));
  const { page: rows, nextCursor } = pageOf(await query.execute(), page.limit);
  return { data: rows.map(submissionJson), has_more: nextCursor !== null, next_cursor: nextCursor };
}
