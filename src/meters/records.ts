import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { storedPlausibilityColumns, storedPlausibilityJson, newestCorrection } from '../pipeline/expect-reading.ts';
import { readingColumns, readingResult, type StoredReading } from '../pipeline/reading-result.ts';
import type { Correction, Submission } from '../schemas/meter-reading.ts';
import { storedNeedsReview } from './review.ts';

/**
 * Submissions with their machine reading, its plausibility and the newest human correction: the one
 * query behind every API representation of a submission (submissionJson) and the dashboard's pages.
 */
export function submissionRecords(db: Db, accountId: string) {
  return db
    .selectFrom('submissions as m')
    .leftJoin('readings as r', 'r.submission_id', 'm.id')
    .leftJoin('submission_photos as i', 'i.submission_id', 'm.id')
    .leftJoin('meter_points as p', 'p.id', 'm.meter_point_id')
    .leftJoin('submissions as rm', 'rm.id', 'r.reference_submission_id')
    .leftJoinLateral(newestCorrection(db, ['reading', 'value', 'corrected_by', 'created_at']), (join) => join.onTrue())
    .select([
      'm.id as submissionId',
      'm.reference_id as referenceId',
      'm.mode',
      'm.status',
      'm.created_at as createdAt',
      'm.finished_at as finishedAt',
      'm.error_code as errorCode',
      'm.error_message as errorMessage',
      'p.external_id as meterId',
      ...readingColumns,
      'i.width as imageWidth',
      'i.height as imageHeight',
      ...storedPlausibilityColumns,
      'c.reading as correctedReading',
      'c.value as correctedValue',
      'c.corrected_by as correctedBy',
      'c.created_at as correctedAt',
      sql<boolean | null>`CASE WHEN m.status IN ('completed', 'failed') THEN ${storedNeedsReview} END`.as(
        'needsReview',
      ),
    ])
    .where('m.account_id', '=', accountId);
}

export function submissionRecord(
  db: Db,
  accountId: string,
  referenceId: string,
): Promise<SubmissionRecord | undefined> {
  return submissionRecords(db, accountId).where('m.reference_id', '=', referenceId).executeTakeFirst();
}

export type SubmissionRecord = Awaited<ReturnType<ReturnType<typeof submissionRecords>['executeTakeFirstOrThrow']>>;

/** The value a person gave, else the machine's; null when there is neither. */
export function billableReading(record: SubmissionRecord): { reading: string; value: number } | null {
  if (record.correctedReading) return { reading: record.correctedReading, value: Number(record.correctedValue) };
  if (record.reading) return { reading: record.reading, value: Number(record.value) };
  return null;
}

/**
 * A submission as the API shows it (GET one, the list, a meter's history, the correction response):
 * its status; once completed, the machine's reading; once failed, the error; once finished, the
 * newest correction beside them (a person may correct a failed submission too) and `needs_review`.
 */
export function submissionJson(record: SubmissionRecord): Submission {
  const submitted = { reference_id: record.referenceId, created_at: record.createdAt.toISOString() };
  if (record.status === 'pending' || record.status === 'processing')
    return { ...submitted, status: record.status, finished_at: null };
  // Set as it finished, in the transaction that stored its reading or its error.
  const finished = { ...submitted, finished_at: record.finishedAt!.toISOString(), correction: correctionJson(record) };
  if (record.status === 'failed') {
    return {
      ...finished,
      status: 'failed',
      error: { code: record.errorCode ?? 'unknown', message: record.errorMessage ?? '' },
      needs_review: record.needsReview!,
    };
  }
  if (!hasReading(record)) throw new Error(`submission ${record.submissionId} is completed without a reading`);
  const frame =
    record.imageWidth && record.imageHeight ? { width: record.imageWidth, height: record.imageHeight } : null;
  return {
    ...finished,
    status: 'completed',
    ...readingResult(record, frame, {
      meterId: record.meterId,
      plausibility: storedPlausibilityJson(record),
      needsReview: record.needsReview!,
    }),
  };
}

/** Whether the record has its readings row, as every completed submission has (stored as it completed). */
function hasReading(record: SubmissionRecord): record is SubmissionRecord & StoredReading {
  return record.readingId !== null;
}

function correctionJson(record: SubmissionRecord): Correction | null {
  if (!record.correctedReading) return null;
  return {
    reading: record.correctedReading,
    value: Number(record.correctedValue),
    corrected_by: record.correctedBy!,
    corrected_at: record.correctedAt!.toISOString(),
  };
}
