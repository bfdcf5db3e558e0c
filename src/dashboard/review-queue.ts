import { type SqlBool, sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { DomainError } from '../errors.ts';
import { consumption, trustedSubmissions } from '../meters/consumption.ts';
import { submissionRecords } from '../meters/records.ts';
import { reviewReasons, storedNeedsReview } from '../meters/review.ts';
import { isReferenceId } from '../schemas/meter-reading.ts';

/** Trusted readings of the item's meter shown beside it: this many before it, and after it. */
const TRUSTED_BEFORE = 4;
const TRUSTED_AFTER = 2;

/** Margin around the counter box in the zoomed photo, as a share of the box's height. */
const ZOOM_MARGIN = 0.6;

/**
 * The review queue (/dashboard/review): the account's submissions that need review, oldest first
 * by (created_at, id), found from the index submissions_review_queue. A pass walks the queue forward from
 * the cursor `after` (the reference_id of the last item skipped): a skipped item stays behind the
 * cursor, so it does not come back until the pass ends and a new one starts from the oldest.
 * Undefined when nothing waits after the cursor.
 */
export async function nextForReview(db: Db, accountId: string, after: string | undefined) {
  let query = submissionRecords(db, accountId)
    .select([
      'm.meter_point_id as meterPointId',
      'm.image_removed_at as imageRemovedAt',
      sql<number>`(SELECT review_below FROM accounts WHERE id = m.account_id)`.as('reviewBelow'),
    ])
    .where(storedNeedsReview)
    .orderBy('m.created_at')
    .orderBy('m.id')
    .limit(1);
  // An item's (created_at, id), compared in SQL: created_at has microseconds, which a JavaScript Date would round away.
  // A cursor whose submission is gone (deleted by retention) matches nothing: the pass ends there.
  if (after)
    query = query.where(
      sql<SqlBool>`(m.created_at, m.id) > (SELECT created_at, id FROM submissions WHERE account_id = ${accountId} AND reference_id = ${after})`,
    );
  const item = await query.executeTakeFirst();
  if (!item) return undefined;
  const finished = item.status === 'failed' ? 'failed' : 'completed';
  return {
    ...item,
    reasons: reviewReasons({
      status: finished,
      plausibility: item.plausibility,
      confidence: item.confidence,
      reviewBelow: item.reviewBelow,
      wholeUnitsAgreed: item.wholeUnitsAgreed ?? false,
      byPerson: false,
    }),
    zoom:
      item.counterBox && item.imageWidth && item.imageHeight
        ? zoomBox(item.counterBox, { width: item.imageWidth, height: item.imageHeight })
        : null,
    beside: item.meterPointId ? besideItem(item, await trustedAround(db, item.meterPointId, item.submissionId)) : null,
  };
}

export type ReviewItem = NonNullable<Awaited<ReturnType<typeof nextForReview>>>;

/**
 * The queue's cursor from a URL or a form: a reference_id, or none; anything else was not made by the queue's pages.
 */
export function reviewCursor(value: string | undefined): string | undefined {
  if (!value) return undefined;
  if (!isReferenceId(value))
    throw new DomainError(
      'invalid',
      'after',
      'This is not a position in the review queue. Start again from the review page.',
    );
  return value;
}

/** The queue's page at the cursor. */
export function reviewPath(after: string | undefined): string {
  return after ? `/dashboard/review?${new URLSearchParams({ after })}` : '/dashboard/review';
}

/**
 * The meter's trusted readings nearest the item, before it and after it by (created_at, id), in time
 * order: what a person compares its reading with. The item itself is never among them.
 */
async function trustedAround(db: Db, meterPointId: string, submissionId: string) {
  const item = sql`(SELECT created_at, id FROM submissions WHERE id = ${submissionId})`;
  const [before, after] = await Promise.all([
    trustedSubmissions(db, meterPointId)
      .where(sql<SqlBool>`(m.created_at, m.id) < ${item}`)
      .orderBy('m.created_at', 'desc')
      .orderBy('m.id', 'desc')
      .limit(TRUSTED_BEFORE)
      .execute(),
    trustedSubmissions(db, meterPointId)
      .where(sql<SqlBool>`(m.created_at, m.id) > ${item}`)
      .orderBy('m.created_at')
      .orderBy('m.id')
      .limit(TRUSTED_AFTER)
      .execute(),
  ]);
  return { before: before.reverse(), after };
}

/**
 * The item among its meter's trusted readings, in time order, each with its change from the row
 * before it (m³; null where either has no value): a misread stands out as a jump or a drop.
 */
function besideItem(
  item: { createdAt: Date; reading: string | null; value: string | null; referenceId: string },
  trusted: Awaited<ReturnType<typeof trustedAround>>,
) {
  const rows = [
    ...trusted.before.map((row) => ({ ...row, isItem: false })),
    {
      readAt: item.createdAt,
      reading: item.reading,
      value: item.value,
      source: null,
      referenceId: item.referenceId,
      isItem: true,
    },
    ...trusted.after.map((row) => ({ ...row, isItem: false })),
  ];
  return rows.map((row, index) => ({
    ...row,
    change: index === 0 ? null : consumption(row.value, rows[index - 1]!.value),
  }));
}

/** The part of the photo to show: the counter box and a margin around it, within the image, as an SVG viewBox. */
export function zoomBox(
  corners: Array<[number, number]>,
  frame: { width: number; height: number },
): { x: number; y: number; width: number; height: number } {
  const xs = corners.map(([x]) => x);
  const ys = corners.map(([, y]) => y);
  const margin = (Math.max(...ys) - Math.min(...ys)) * ZOOM_MARGIN;
  const x = Math.max(0, Math.floor(Math.min(...xs) - margin));
  const y = Math.max(0, Math.floor(Math.min(...ys) - margin));
  return {
    x,
    y,
    width: Math.min(frame.width, Math.ceil(Math.max(...xs) + margin)) - x,
    height: Math.min(frame.height, Math.ceil(Math.max(...ys) + margin)) - y,
  };
}
