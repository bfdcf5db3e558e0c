import { Readable } from 'node:stream';
import { type SqlBool, sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { filteredSubmissions, type SubmissionFilter } from '../submissions.ts';
import { isTrusted } from '../pipeline/expect-reading.ts';
import { EXPORT_COLUMNS, type ExportColumn } from '../schemas/meter-reading.ts';
import { consumption, trustedSubmissions } from './consumption.ts';

/** Rows fetched per query: a slow reader holds no connection between batches, and memory stays at one batch. */
export const EXPORT_BATCH_SIZE = 1000;

type Cell = string | number | boolean | Date | null | undefined;

/**
 * One RFC 4180 field. Text that a spreadsheet would run as a formula (=, +, -, @, or a tab or carriage
 * return before one) gets a leading apostrophe; numbers we write are plain numbers, never formulas.
 */
export function csvCell(cell: Cell): string {
  if (cell === null || cell === undefined) return '';
  if (cell instanceof Date) return cell.toISOString();
  if (typeof cell !== 'string') return String(cell);
  const text = /^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvLine(cells: readonly Cell[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

/**
 * A batch of the account's submissions under the filter, newest first, after the row `afterId`, with the meter's
 * previous trusted value.
 */
function exportBatch(db: Db, accountId: string, filter: SubmissionFilter, afterId: string | undefined) {
  let page = filteredSubmissions(db, accountId, filter)
    .select(['m.meter_point_id as meterPointId', sql<boolean>`${isTrusted}`.as('trusted')])
    .orderBy('m.created_at', 'desc')
    .orderBy('m.id', 'desc')
    .limit(EXPORT_BATCH_SIZE);
  // Compared in SQL: created_at has microseconds, which a JavaScript Date would round away.
  if (afterId)
    page = page.where(
      sql<SqlBool>`(m.created_at, m.id) < (SELECT created_at, id FROM submissions WHERE id = ${afterId})`,
    );
  return db
    .selectFrom(page.as('s'))
    .leftJoinLateral(
      // The meter's newest trusted value before this submission, by (created_at, id): the index submissions_meter_point.
      trustedSubmissions(db, sql.ref('s.meterPointId'))
        .where(sql<SqlBool>`(m.created_at, m.id) < (s."createdAt", s."submissionId")`)
        .orderBy('m.created_at', 'desc')
        .orderBy('m.id', 'desc')
        .limit(1)
        .as('previous'),
      (join) => join.onTrue(),
    )
    .selectAll('s')
    .select('previous.value as previousValue')
    .orderBy('s.createdAt', 'desc')
    .orderBy('s.submissionId', 'desc')
    .execute();
}

type ExportRow = Awaited<ReturnType<typeof exportBatch>>[number];

/**
 * How the billable value came about: the machine's reading, a person's confirmation or correction of it, a manual
 * reading, or nothing (failed).
 */
function quality(row: ExportRow): 'machine' | 'confirmed' | 'corrected' | 'manual' | 'failed' | null {
  if (row.correctedReading !== null) return row.correctedReading === row.reading ? 'confirmed' : 'corrected';
  if (row.mode === 'manual') return 'manual';
  if (row.status === 'failed') return 'failed';
  return row.status === 'completed' ? 'machine' : null;
}

function exportLine(row: ExportRow): string {
  const trustedValue = row.correctedValue ?? row.value;
  const cells: Record<ExportColumn, Cell> = {
    reference_id: row.referenceId,
    meter_id: row.meterId,
    created_at: row.createdAt,
    finished_at: row.finishedAt,
    status: row.status,
    reading: row.reading,
    value: row.value === null ? null : Number(row.value),
    unit: 'm3',
    confidence: row.confidence,
    plausibility: row.plausibility,
    needs_review: row.needsReview,
    whole_units_agreed: row.status === 'completed' ? row.wholeUnitsAgreed : null,
    quality: quality(row),
    consumption: row.trusted ? consumption(trustedValue, row.previousValue) : null,
    corrected_reading: row.correctedReading,
    corrected_by: row.correctedBy,
    corrected_at: row.correctedAt,
    escalated: row.escalated,
    model: row.model,
  };
  return csvLine(EXPORT_COLUMNS.map((column) => cells[column]));
}

/**
 * The billing export (docs/api.md, "The billing export"): a header row, then one row per submission
 * under the filter, newest first, fetched EXPORT_BATCH_SIZE rows at a time as the reader takes them.
 */
export function billingExport(db: Db, accountId: string, filter: SubmissionFilter): Readable {
  async function* lines() {
    yield csvLine(EXPORT_COLUMNS);
    let afterId: string | undefined;
    for (;;) {
      const rows = await exportBatch(db, accountId, filter, afterId);
      if (rows.length > 0) yield rows.map(exportLine).join('');
      if (rows.length < EXPORT_BATCH_SIZE) return;
      afterId = rows.at(-1)!.submissionId;
    }
  }
  return Readable.from(lines(), { objectMode: false });
}
