import { type SqlBool, sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { isTrusted, newestCorrection } from '../pipeline/expect-reading.ts';

/** The window of "consumption over the last 30 days". */
export const CONSUMPTION_DAYS = 30;
/** The most calendar months the meter page's table shows. */
export const CONSUMPTION_MONTHS = 24;

/**
 * The trusted submissions (isTrusted) of the meter point `meterPoint` (an SQL expression: its id, or
 * a column of an outer query), with their trusted reading: the newest correction, else the reading.
 * Walk it newest first (`m.id`), which the index submissions_meter_point serves.
 */
export function trustedSubmissions(db: Db, meterPoint: ReturnType<typeof sql.ref> | string) {
  return db
    .selectFrom('submissions as m')
    .leftJoin('readings as r', 'r.submission_id', 'm.id')
    .leftJoinLateral(newestCorrection(db, ['reading', 'value']), (join) => join.onTrue())
    .select([
      'm.id as submissionId',
      'm.reference_id as referenceId',
      'm.created_at as readAt',
      sql<string>`coalesce(c.reading, r.reading)`.as('reading'),
      sql<string>`coalesce(c.value, r.value)`.as('value'),
      sql<
        'correction' | 'reading' | 'manual'
      >`CASE WHEN c.reading IS NOT NULL THEN 'correction' WHEN m.mode = 'manual' THEN 'manual' ELSE 'reading' END`.as(
        'source',
      ),
    ])
    .where(sql<SqlBool>`m.meter_point_id = ${meterPoint}`)
    .where(isTrusted);
}

/**
 * Consumption over a span: the last trusted value in it less the last trusted value before it. Null
 * when either is missing (no reading in the span, or none before it to start from).
 */
export function consumption(
  lastInSpan: string | number | null | undefined,
  lastBefore: string | number | null | undefined,
): number | null {
  if (lastInSpan === null || lastInSpan === undefined || lastBefore === null || lastBefore === undefined) return null;
  return roundVolume(Number(lastInSpan) - Number(lastBefore));
}

export interface MonthlyConsumption {
  /** The calendar month (UTC) as YYYY-MM. */
  month: string;
  /** The last trusted reading of the month. */
  reading: string;
  /** m³ since the last trusted reading before the month; null for the meter's first month. */
  consumption: number | null;
}

/** Consumption per calendar month (UTC), newest first, for the months that have a trusted reading. */
export async function monthlyConsumption(db: Db, meterPointId: string): Promise<MonthlyConsumption[]> {
  const months = await db
    .selectFrom(
      trustedSubmissions(db, meterPointId)
        .select(sql<string>`to_char(date_trunc('month', m.created_at, 'UTC'), 'YYYY-MM')`.as('month'))
        .as('t'),
    )
    .select(['month', 'reading', 'value'])
    .distinctOn('month')
    .orderBy('month', 'desc')
    .orderBy('readAt', 'desc')
    .limit(CONSUMPTION_MONTHS + 1)
    .execute();
  return months.slice(0, CONSUMPTION_MONTHS).map((row, index) => ({
    month: row.month,
    reading: row.reading,
    consumption: consumption(row.value, months[index + 1]?.value),
  }));
}

/** Readings have at most a few decimals; this keeps float noise (0.1 + 0.2) out of volumes. */
export function roundVolume(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
