import { type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import type { Db, Tx } from '../db/database.ts';
import type { Database, ReferenceSource } from '../db/schema.ts';
import type { ChainReading } from '../readers/chain.ts';
import { layoutShownBy, lowestNextValue, type MeterLayout } from '../readers/layout.ts';
import type { Plausibility, PlausibilityWindow } from '../readers/reader.ts';
import { FLAGGED } from '../meters/review.ts';
import { usualAllowance, usualConsumption, type UsualConsumption } from '../meters/usual-consumption.ts';
import { MAX_INTERVALS, MIN_ELAPSED_HOURS, UNDATED_ELAPSED_HOURS } from '../plausibility-policy.ts';

/** The reading a new photo is judged against, and when the meter showed it (null: not known). */
export interface MeterReference {
  reading: string;
  source: ReferenceSource;
  readAt: Date | null;
  /**
   * The submission it is the value of (its submissions row and reference_id); null: this submission's own
   * previous_reading.
   */
  submissionId: string | null;
  referenceId: string | null;
}

/** The most the meter usually has run since the reference (its usual consumption's allowance), m³. */
export type UsualWindow = UsualConsumption & { max: number };

/** What the service expects of a meter's next reading: its reference and windows, and its layout, each if known. */
export interface MeterExpectation {
  reference?: MeterReference;
  window?: PlausibilityWindow;
  usual?: UsualWindow;
  layout?: MeterLayout;
}

/**
 * What the read step knows about the photo's meter: its client id, the account's review threshold, and what it expects.
 */
export interface ReadContext extends MeterExpectation {
  meterId: string | null;
  reviewBelow: number;
}

/**
 * A meter's newest trusted values, which give its reference, its layout and its usual consumption: enough for
 * MAX_INTERVALS of monthly readings and then some.
 */
const TRUSTED_HISTORY_LIMIT = 100;

/**
 * When those are all it has, the days before them (one value each, newestEachDay) its usual consumption is learned
 * from too: a meter read every few minutes fills TRUSTED_HISTORY_LIMIT in hours, where a usual rate needs days. Two
 * newest-of-a-day values can be less than a day apart and merge into one interval, so twice MAX_INTERVALS of them.
 */
const TRUSTED_HISTORY_DAYS = 2 * MAX_INTERVALS + 1;

/**
 * Step 6a: what the service expects of a submission's reading (meterExpectation), from its meter's settings and trusted
 * history.
 */
export async function readContext(db: Db, submissionId: string): Promise<ReadContext> {
  const submission = await db
    .selectFrom('submissions as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .leftJoin('meter_points as p', 'p.id', 'm.meter_point_id')
    .select([
      'm.id',
      'm.created_at',
      'm.meter_point_id',
      'm.previous_reading',
      'm.previous_read_at',
      'p.external_id',
      'p.whole_wheels',
      'p.fractional_wheels',
      'a.review_below',
      'a.usual_m3_per_day',
      sql<string>`coalesce(p.max_flow_m3_per_hour, a.max_flow_m3_per_hour)`.as('max_flow'),
    ])
    .where('m.id', '=', submissionId)
    .executeTakeFirstOrThrow();
  const history = submission.meter_point_id ? await trustedHistory(db, submission.meter_point_id, submission) : [];
  const expected = meterExpectation({
    previous: submission.previous_reading
      ? {
          reading: submission.previous_reading,
          source: 'previous_reading',
          readAt: submission.previous_read_at,
          submissionId: null,
          referenceId: null,
        }
      : undefined,
    history,
    takenAt: submission.created_at,
    maxFlow: Number(submission.max_flow),
    usualPerDay: Number(submission.usual_m3_per_day),
    layoutSet: layoutSetting(submission),
  });
  return { meterId: submission.external_id, reviewBelow: submission.review_below, ...expected };
}

/** What is known of a meter before a photo it showed at `takenAt`. */
export interface MeterFacts {
  /** The submission's own `previous_reading`. */
  previous?: MeterReference;
  /** The meter's trusted values before the photo, newest first (trustedHistory). */
  history: MeterReference[];
  takenAt: Date;
  /** m³/h: the meter's, else the account's. */
  maxFlow: number;
  /** The account's usual consumption of a meter with too little history, m³ a day. */
  usualPerDay: number;
  layoutSet?: MeterLayout;
}

/**
 * What the service expects of a meter's reading. The reference is the client's `previous_reading`
 * if it sent one, else the meter's newest trusted value. The physical window is the hard limit
 * (implausible); the usual one, from the meter's trusted history or the account's default, the soft
 * one (suspicious). No reference (no meter_id, or nothing trusted yet): no window. The layout is the
 * one set for the meter, else the one the reference or the newest trusted value written with its
 * leading zeros shows (knownLayout).
 */
export function meterExpectation(facts: MeterFacts): MeterExpectation {
  const layout = knownLayout(facts.layoutSet, facts.previous ? [facts.previous, ...facts.history] : facts.history);
  const reference = facts.previous ?? facts.history[0];
  if (!reference) return { layout };
  const points = facts.history
    .filter((point) => point.readAt !== null)
    .map((point) => ({ at: point.readAt!, reading: point.reading }));
  const usual = usualConsumption(points, facts.usualPerDay);
  const usualMax = roundVolume(
    Number(reference.reading) + usualAllowance(usual, elapsedHours(reference, facts.takenAt) / 24),
  );
  return {
    reference,
    window: { ...plausibilityWindow(reference, facts.takenAt, facts.maxFlow), usualMax },
    usual: { ...usual, max: usualMax },
    layout,
  };
}

/** The layout set for a meter, else the one the first of `values` (newest first) that shows one shows. */
export function knownLayout(
  set: MeterLayout | undefined,
  values: Array<Pick<MeterReference, 'reading'>>,
): MeterLayout | undefined {
  if (set) return set;
  for (const value of values) {
    const shown = layoutShownBy(value.reading);
    if (shown) return shown;
  }
  return undefined;
}

/** The layout a meter point row has set, if any. */
export function layoutSetting(row: {
  whole_wheels: number | null;
  fractional_wheels: number | null;
}): MeterLayout | undefined {
  return row.whole_wheels === null || row.fractional_wheels === null
    ? undefined
    : { whole: row.whole_wheels, fraction: row.fractional_wheels };
}

/**
 * The layout a meter's next reading is judged in (knownLayout), from its setting and all its trusted values; but for
 * the value of the submission `except` (its previous_reading still counts): the layout a person's correction of that
 * submission is held to.
 */
export async function meterLayout(db: Db, meterPointId: string, except?: string): Promise<MeterLayout | undefined> {
  const point = await db
    .selectFrom('meter_points')
    .select(['whole_wheels', 'fractional_wheels'])
    .where('id', '=', meterPointId)
    .executeTakeFirstOrThrow();
  const values = (await trustedHistory(db, meterPointId)).filter(
    (value) => value.submissionId !== except || value.source === 'previous_reading',
  );
  return knownLayout(layoutSetting(point), values);
}

/**
 * Not below the reference, less one step of its fastest wheel (a wheel half-way may be read either
 * way); not above the reference plus the maximum flow over the hours since it was read.
 */
export function plausibilityWindow(
  reference: Pick<MeterReference, 'reading' | 'source' | 'readAt'>,
  takenAt: Date,
  maxFlowPerHour: number,
): PlausibilityWindow {
  const value = Number(reference.reading);
  const allowance = maxFlowPerHour * Math.max(elapsedHours(reference, takenAt), MIN_ELAPSED_HOURS);
  return {
    reference: reference.reading,
    min: lowestNextValue(reference.reading),
    max: roundVolume(value + allowance),
  };
}

/** The plausibility part of a reading's API representation (sync response, webhook, history). */
export function plausibilityJson(
  reading: Pick<ChainReading, 'plausibility' | 'unconstrainedReading' | 'plausibilityReason'>,
  context: {
    reference?: Pick<MeterReference, 'reading' | 'source' | 'referenceId'>;
    window?: Pick<PlausibilityWindow, 'min' | 'max'>;
    usual?: Pick<UsualWindow, 'max'>;
  },
) {
  return {
    status: reading.plausibility,
    reference: context.reference?.reading ?? null,
    reference_source: context.reference?.source ?? null,
    reference_submission: context.reference?.referenceId ?? null,
    window: context.window
      ? { min: context.window.min, max: context.window.max, ...(context.usual ? { usual_max: context.usual.max } : {}) }
      : null,
    ...(reading.unconstrainedReading ? { unconstrained_reading: reading.unconstrainedReading } : {}),
    ...(reading.plausibilityReason ? { reason: reading.plausibilityReason } : {}),
  };
}
export type PlausibilityJson = ReturnType<typeof plausibilityJson>;

/** A reading's plausibility as the readings table stores it (the columns' camel-cased names). */
export interface StoredPlausibility {
  plausibility: Plausibility | null;
  referenceReading: string | null;
  referenceSource: ReferenceSource | null;
  /** reference_id of the submission the reference came from (readings.reference_submission_id). */
  referenceSubmission: string | null;
  windowMin: string | null;
  windowMax: string | null;
  usualMax: string | null;
  unconstrainedReading: string | null;
  plausibilityReason: string | null;
}

/**
 * The readings columns behind StoredPlausibility, for a query that joins readings as `r` and the reference's submission
 * as `rm`.
 */
export const storedPlausibilityColumns = [
  sql<Plausibility | null>`r.plausibility`.as('plausibility'),
  sql<string | null>`r.reference_reading`.as('referenceReading'),
  sql<ReferenceSource | null>`r.reference_source`.as('referenceSource'),
  sql<string | null>`rm.reference_id`.as('referenceSubmission'),
  sql<string | null>`r.window_min`.as('windowMin'),
  sql<string | null>`r.window_max`.as('windowMax'),
  sql<string | null>`r.usual_max`.as('usualMax'),
  sql<string | null>`r.unconstrained_reading`.as('unconstrainedReading'),
  sql<string | null>`r.plausibility_reason`.as('plausibilityReason'),
];

/** plausibilityJson of a stored reading; undefined for a submission with no reading. */
export function storedPlausibilityJson(stored: StoredPlausibility): PlausibilityJson | undefined {
  if (!stored.plausibility) return undefined;
  const { referenceReading, referenceSource, windowMin, windowMax, usualMax } = stored;
  return plausibilityJson(
    {
      plausibility: stored.plausibility,
      unconstrainedReading: stored.unconstrainedReading ?? undefined,
      plausibilityReason: stored.plausibilityReason ?? undefined,
    },
    {
      reference:
        referenceReading && referenceSource
          ? { reading: referenceReading, source: referenceSource, referenceId: stored.referenceSubmission }
          : undefined,
      window:
        referenceReading && windowMin !== null && windowMax !== null
          ? { min: Number(windowMin), max: Number(windowMax) }
          : undefined,
      usual: usualMax === null ? undefined : { max: Number(usualMax) },
    },
  );
}

/**
 * The newest correction of the submission `m`, as the lateral table `c` that isTrusted reads: a person's last word
 * on a submission. Join it with `.leftJoinLateral(newestCorrection(db, [...]), (join) => join.onTrue())`.
 */
export function newestCorrection<C extends keyof Database['reading_corrections'] & string>(
  db: Db,
  columns: readonly C[],
) {
  return db
    .selectFrom('reading_corrections')
    .select(columns)
    .where('submission_id', '=', sql.ref<string>('m.id'))
    .orderBy('id', 'desc')
    .limit(1)
    .as('c');
}

/**
 * Whether a submission's value can be trusted: a person corrected or confirmed it (`c`, its newest
 * correction), or it was read (`r`) and the reading was not flagged (FLAGGED). The meter's next
 * reference, its last trusted reading and its consumption all come from such submissions.
 */
export const isTrusted = sql<SqlBool>`(c.reading IS NOT NULL OR (r.reading IS NOT NULL AND r.plausibility NOT IN (${sql.join(FLAGGED.map((status) => sql.lit(status)))})))`;

/** A query of one meter's submissions `m`, as newestFirst and newestEachDay take it. */
type SubmissionsQuery<O> = SelectQueryBuilder<Database & { m: Database['submissions'] }, 'm', O>;

/** Newest first, as the index on (meter_point_id, created_at DESC, id DESC) walks a meter's submissions. */
export function newestFirst<O>(query: SubmissionsQuery<O>): SubmissionsQuery<O> {
  return query.orderBy('m.created_at', 'desc').orderBy('m.id', 'desc');
}

/**
 * Of the submissions `rows` selects (`m`, one meter's, not yet ordered), the newest, then the newest of each earlier
 * UTC day that has one: at most `days` of them, newest first. `at` is the column `rows` selects m.created_at as. A
 * meter read every few minutes then weighs no more than one read daily, and its values reach as far back; each row
 * found is one probe of the index.
 */
export async function newestEachDay<O>(
  db: Db | Tx,
  rows: () => SubmissionsQuery<O>,
  at: keyof O & string,
  days: number,
): Promise<O[]> {
  const earlierDay = rows().where(sql<SqlBool>`m.created_at < date_trunc('day', ${sql.ref(`daily.${at}`)}, 'UTC')`);
  // The recursion appends each day after the one before, but only an ORDER BY promises an order.
  const { rows: found } = await sql<O>`
    WITH RECURSIVE daily AS (
      SELECT * FROM ${newestFirst(rows()).limit(1)} AS newest
      UNION ALL
      SELECT earlier.* FROM daily CROSS JOIN LATERAL ${newestFirst(earlierDay).limit(1)} AS earlier
    )
    SELECT * FROM (SELECT * FROM daily LIMIT ${days}) AS found ORDER BY ${sql.ref(`found.${at}`)} DESC`.execute(db);
  return found;
}

/**
 * The meter point's trusted values (before the submission `before`, if given), newest first (by when the meter showed
 * them): its newest TRUSTED_HISTORY_LIMIT and, when it has that many, one a day (newestEachDay) over the
 * TRUSTED_HISTORY_DAYS before them. Of each submission its value if trusted (isTrusted), else the `previous_reading`
 * it came with. A manual reading is a submission whose time is its read_at.
 */
async function trustedHistory(
  db: Db,
  meterPointId: string,
  before?: { id: string; created_at: Date },
): Promise<MeterReference[]> {
  const rows = () => trustedRows(db, meterPointId, before);
  const newestRows = await newestFirst(rows()).limit(TRUSTED_HISTORY_LIMIT).execute();
  const oldest = newestRows.length === TRUSTED_HISTORY_LIMIT ? newestRows.at(-1) : undefined;
  const earlierDays = oldest
    ? await newestEachDay(
        db,
        () => rows().where('m.created_at', '<', oldest.created_at),
        'created_at',
        TRUSTED_HISTORY_DAYS,
      )
    : [];
  return [...newestRows, ...earlierDays].map(trustedReference);
}

/** trustedHistory's submissions, not yet ordered: those with a trusted value or a previous_reading. */
function trustedRows(db: Db, meterPointId: string, before?: { id: string; created_at: Date }) {
  const query = db
    .selectFrom('submissions as m')
    .leftJoin('readings as r', 'r.submission_id', 'm.id')
    .leftJoinLateral(newestCorrection(db, ['reading']), (join) => join.onTrue())
    .select([
      'm.id',
      'm.reference_id',
      'm.mode',
      'm.created_at',
      'm.previous_reading',
      'm.previous_read_at',
      'r.reading',
      'r.plausibility',
      'c.reading as corrected',
    ])
    .where('m.meter_point_id', '=', meterPointId)
    .where((eb) => eb.or([isTrusted, eb('m.previous_reading', 'is not', null)]));
  return before ? query.where('m.id', '<>', before.id).where('m.created_at', '<=', before.created_at) : query;
}

function trustedReference(row: Awaited<ReturnType<ReturnType<typeof trustedRows>['execute']>>[number]): MeterReference {
  const of = { submissionId: row.id, referenceId: row.reference_id };
  if (row.corrected) return { reading: row.corrected, source: 'correction', readAt: row.created_at, ...of };
  if (row.reading && !FLAGGED.includes(row.plausibility!)) {
    return {
      reading: row.reading,
      source: row.mode === 'manual' ? 'manual' : 'reading',
      readAt: row.created_at,
      ...of,
    };
  }
  return { reading: row.previous_reading!, source: 'previous_reading', readAt: row.previous_read_at, ...of };
}

/** Hours from the reference to the photo; UNDATED_ELAPSED_HOURS when the reference has no date. */
function elapsedHours(reference: Pick<MeterReference, 'readAt'>, takenAt: Date): number {
  return reference.readAt ? (takenAt.getTime() - reference.readAt.getTime()) / 3_600_000 : UNDATED_ELAPSED_HOURS;
}

/** Readings have at most a few decimals; this keeps float noise (0.1 + 0.2) out of the window. */
function roundVolume(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
