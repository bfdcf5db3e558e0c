import type { Db } from '../db/database.ts';
import { storedPlausibilityColumns, storedPlausibilityJson } from '../pipeline/plausibility.ts';

/**
 * Submissions with their machine reading, its plausibility and the newest human correction:
 * what the history API, the correction response and the dashboard's meter page show.
 */
export function submissionRecords(db: Db, accountId: string) {
  return db
    .selectFrom('meters as m')
    .leftJoin('readings as r', 'r.meter_id', 'm.id')
    .leftJoin('meter_points as p', 'p.id', 'm.meter_point_id')
    .leftJoinLateral(
      (eb) => eb
        .selectFrom('reading_corrections')
        .select(['reading', 'value', 'corrected_by', 'created_at'])
        .whereRef('meter_id', '=', 'm.id')
        .orderBy('id', 'desc')
        .limit(1)
        .as('c'),
      (join) => join.onTrue(),
    )
    .select([
      'm.id as meterRowId',
      'm.reference_id as referenceId',
      'm.status',
      'm.created_at as createdAt',
      'p.external_id as meterId',
      'r.id as readingId',
      'r.reading',
      'r.value',
      'r.confidence',
      ...storedPlausibilityColumns,
      'c.reading as correctedReading',
      'c.value as correctedValue',
      'c.corrected_by as correctedBy',
      'c.created_at as correctedAt',
    ])
    .where('m.account_id', '=', accountId);
}

export function submissionRecord(db: Db, accountId: string, referenceId: string): Promise<SubmissionRecord | undefined> {
  return submissionRecords(db, accountId).where('m.reference_id', '=', referenceId).executeTakeFirst();
}

export type SubmissionRecord = Awaited<ReturnType<ReturnType<typeof submissionRecords>['executeTakeFirstOrThrow']>>;

/** The value a person gave, else the machine's; null when there is neither. */
export function billableReading(record: SubmissionRecord): { reading: string; value: number } | null {
  if (record.correctedReading) return { reading: record.correctedReading, value: Number(record.correctedValue) };
  if (record.reading) return { reading: record.reading, value: Number(record.value) };
  return null;
}

/** A submission as the API shows it: the machine's reading and, when a person corrected it, the correction beside it. */
export function submissionJson(record: SubmissionRecord) {
  return {
    reference_id: record.referenceId,
    status: record.status,
    submitted_at: record.createdAt.toISOString(),
    meter_id: record.meterId,
    reading: record.reading,
    value: record.value === null ? null : Number(record.value),
    confidence: record.confidence,
    reading_id: record.readingId === null ? null : Number(record.readingId),
    plausibility: storedPlausibilityJson(record),
    correction: record.correctedReading
      ? {
        reading: record.correctedReading,
        value: Number(record.correctedValue),
        corrected_by: record.correctedBy,
        corrected_at: record.correctedAt!.toISOString(),
      }
      : null,
  };
}
