import type { SessionUser } from '../accounts/sessions.ts';
import type { Db } from '../db/database.ts';
import type { SubmissionStatus } from '../db/schema.ts';
import { DomainError } from '../errors.ts';
import { countSubmissions, filteredSubmissions, keysetAfter, pageOf, type SubmissionFilter } from '../submissions.ts';
import { confirmReading, type CorrectionDeps, correctReading } from '../meters/corrections.ts';
import { submissionRecords } from '../meters/records.ts';
import { METER_ID_PATTERN, readingField } from '../pipeline/identify-meter.ts';
import { loadJpeg, type PhotoDeps } from '../photos/meter-photos.ts';
import type { Plausibility } from '../readers/reader.ts';
import { isReferenceId, PlausibilityStatus } from '../schemas/meter-reading.ts';

export const METER_STATUSES: readonly SubmissionStatus[] = ['pending', 'processing', 'completed', 'failed'];
export const PLAUSIBILITIES: readonly Plausibility[] = PlausibilityStatus.anyOf.map((member) => member.const);
const PAGE_SIZE = 100;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** The readings list's query as its form sends it: every filter, and the page's cursor. */
export interface ReadingsQuery {
  status?: string;
  plausibility?: string;
  needs_review?: string;
  meter_id?: string;
  from?: string;
  to?: string;
  after?: string;
}

/**
 * The filter of the readings list's form: a status, a plausibility, needs_review (`true` or `false`), a meter_id, and a
 * range of UTC days (both included). A value that is none of these is left out, and the form shows what applied.
 */
export function readingsFilter(query: ReadingsQuery): { filter: SubmissionFilter; form: Omit<ReadingsQuery, 'after'> } {
  const status = METER_STATUSES.find((value) => value === query.status);
  const plausibility = PLAUSIBILITIES.find((value) => value === query.plausibility);
  const needsReview = query.needs_review === 'true' ? true : query.needs_review === 'false' ? false : undefined;
  const meterId = query.meter_id && METER_ID_PATTERN.test(query.meter_id) ? query.meter_id : undefined;
  const from = utcDay(query.from);
  const to = utcDay(query.to);
  return {
    filter: {
      status,
      plausibility,
      needsReview,
      meterId,
      createdFrom: from,
      createdBefore: to && new Date(to.getTime() + 86_400_000),
    },
    form: {
      status,
      plausibility,
      needs_review: needsReview === undefined ? undefined : String(needsReview),
      meter_id: meterId,
      from: from && query.from,
      to: to && query.to,
    },
  };
}

/**
 * The account's submissions under the filter, newest first, a page after the reference `after`, and how many match in
 * all.
 */
export async function readingsPage(db: Db, accountId: string, filter: SubmissionFilter, after: string | undefined) {
  let query = withKey(filteredSubmissions(db, accountId, filter))
    .orderBy('m.created_at', 'desc')
    .orderBy('m.id', 'desc')
    .limit(PAGE_SIZE + 1);
  if (after) query = query.where(await keysetAfter(db, accountId, after, 'after'));
  const { page, nextCursor } = pageOf(await query.execute(), PAGE_SIZE);
  return { readings: page, nextCursor, total: await countSubmissions(db, accountId, filter) };
}

/** One submission with what the detail view shows; undefined when the account has no such reference. */
export async function readingDetail(db: Db, accountId: string, referenceId: string) {
  if (!isReferenceId(referenceId)) return undefined;
  return withKey(submissionRecords(db, accountId))
    .select(['m.mode', 'm.image_removed_at as imageRemovedAt', 'r.read_ms as readMs'])
    .where('m.reference_id', '=', referenceId)
    .executeTakeFirst();
}

/** The normalised upright JPEG of one of the account's submissions, once the read step has made it. */
export async function readingPhoto(
  deps: PhotoDeps,
  accountId: string,
  referenceId: string,
): Promise<Buffer | undefined> {
  if (!isReferenceId(referenceId)) return undefined;
  const meter = await deps.db
    .selectFrom('submissions')
    .select('id')
    .where('account_id', '=', accountId)
    .where('reference_id', '=', referenceId)
    .executeTakeFirst();
  return meter && loadJpeg(deps, meter.id);
}

function utcDay(value: string | undefined): Date | undefined {
  if (!value || !DAY.test(value)) return undefined;
  const day = new Date(`${value}T00:00:00Z`);
  return Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== value ? undefined : day;
}

/** Submissions as the API represents them (submissionRecords), with the key that sent each. */
function withKey<Q extends ReturnType<typeof submissionRecords>>(query: Q) {
  return query
    .innerJoin('api_keys as k', 'k.id', 'm.api_key_id')
    .select(['k.project_name as keyProject', 'k.display_prefix as keyPrefix', 'k.display_suffix as keySuffix']);
}

/** The page's answer to a reference the account does not have. */
export const submissionNotFound = () =>
  new DomainError('not_found', 'reference_id', 'No submission with this reference in your account.');

/**
 * The signed-in person's reading of a submission, typed into a form as the dial shows it (a correction; unchanged, a
 * confirmation).
 */
export async function correctAsUser(
  deps: CorrectionDeps,
  user: SessionUser,
  referenceId: string,
  typed: string | undefined,
): Promise<void> {
  let reading;
  try {
    reading = readingField(typed, 'reading');
  } catch (error) {
    if (error instanceof DomainError)
      throw new DomainError(
        'invalid',
        'reading',
        'The reading must be digits as the dial shows them, with at most one decimal point, e.g. 00606.494.',
      );
    throw error;
  }
  const corrected = await correctReading(deps, user.accountId, referenceId, reading, {
    userId: user.userId,
    label: user.email,
  });
  if (corrected.outcome === 'not_found') throw submissionNotFound();
  if (corrected.outcome === 'not_finished')
    throw new DomainError(
      'invalid',
      'reference_id',
      'This submission is still being read: correct it once it has finished.',
    );
}

/** The signed-in person confirms the machine's reading of a submission. */
export async function confirmAsUser(deps: CorrectionDeps, user: SessionUser, referenceId: string): Promise<void> {
  const confirmed = await confirmReading(deps, user.accountId, referenceId, { userId: user.userId, label: user.email });
  if (confirmed.outcome === 'not_found') throw submissionNotFound();
  if (confirmed.outcome === 'not_finished' || confirmed.outcome === 'nothing_to_confirm')
    throw new DomainError(
      'invalid',
      'reference_id',
      'This submission has no finished reading to confirm: correct it instead.',
    );
}
