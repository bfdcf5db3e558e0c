import { type SqlBool, sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { ReferenceSource } from '../db/schema.ts';
import type { ChainReading } from '../readers/chain.ts';
import type { Plausibility, PlausibilityWindow } from '../readers/reader.ts';

/** However little time has passed, the window allows this many hours of the maximum flow. */
export const MIN_ELAPSED_HOURS = 1;
/** A `previous_reading` without `previous_read_at` is taken as up to a year old. */
export const UNDATED_ELAPSED_HOURS = 366 * 24;

/** The reading a new photo is judged against, and when the meter showed it (null: not known). */
export interface MeterReference {
  reading: string;
  source: ReferenceSource;
  readAt: Date | null;
}

/** What the read step knows about the photo's meter: its client id, and the reference and window, if any. */
export interface ReadContext {
  meterId: string | null;
  reference?: MeterReference;
  window?: PlausibilityWindow;
}

/**
 * Step 6a: the plausibility window for a submission. The reference is the client's
 * `previous_reading` if it sent one, else the newest earlier submission of the same meter point
 * that has a trusted value: its latest correction, else its reading unless that was implausible,
 * else the `previous_reading` it came with. No meter_id, or nothing trusted yet: no window.
 */
export async function readContext(db: Db, meterId: string): Promise<ReadContext> {
  const meter = await db
    .selectFrom('meters as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .leftJoin('meter_points as p', 'p.id', 'm.meter_point_id')
    .select([
      'm.id',
      'm.created_at',
      'm.meter_point_id',
      'm.previous_reading',
      'm.previous_read_at',
      'p.external_id',
      sql<string>`coalesce(p.max_flow_m3_per_hour, a.max_flow_m3_per_hour)`.as('max_flow'),
    ])
    .where('m.id', '=', meterId)
    .executeTakeFirstOrThrow();
  const context: ReadContext = { meterId: meter.external_id };
  const reference: MeterReference | undefined = meter.previous_reading
    ? { reading: meter.previous_reading, source: 'previous_reading', readAt: meter.previous_read_at }
    : meter.meter_point_id
      ? await lastTrustedReading(db, meter.meter_point_id, meter)
      : undefined;
  if (!reference) return context;
  return { ...context, reference, window: plausibilityWindow(reference, meter.created_at, Number(meter.max_flow)) };
}

/**
 * Not below the reference, less one step of its fastest wheel (a wheel half-way may be read either
 * way); not above the reference plus the maximum flow over the hours since it was read.
 */
export function plausibilityWindow(reference: MeterReference, takenAt: Date, maxFlowPerHour: number): PlausibilityWindow {
  const value = Number(reference.reading);
  const decimals = reference.reading.split('.')[1]?.length ?? 0;
  const fastestWheelStep = 10 ** -decimals;
  const elapsedHours = reference.readAt ? (takenAt.getTime() - reference.readAt.getTime()) / 3_600_000 : UNDATED_ELAPSED_HOURS;
  const allowance = maxFlowPerHour * Math.max(elapsedHours, MIN_ELAPSED_HOURS);
  return { reference: reference.reading, min: roundVolume(value - fastestWheelStep), max: roundVolume(value + allowance) };
}

/** The plausibility part of a reading's API representation (sync response, webhook, history). */
export function plausibilityJson(
  reading: Pick<ChainReading, 'plausibility' | 'unconstrainedReading' | 'plausibilityReason'>,
  context: Pick<ReadContext, 'reference' | 'window'>,
) {
  return {
    status: reading.plausibility,
    reference: context.reference?.reading ?? null,
    reference_source: context.reference?.source ?? null,
    window: context.window ? { min: context.window.min, max: context.window.max } : null,
    ...(reading.unconstrainedReading ? { unconstrained_reading: reading.unconstrainedReading } : {}),
    ...(reading.plausibilityReason ? { reason: reading.plausibilityReason } : {}),
  };
}

/** A reading's plausibility as the readings table stores it (the columns' camel-cased names). */
export interface StoredPlausibility {
  plausibility: Plausibility | null;
  referenceReading: string | null;
  referenceSource: ReferenceSource | null;
  windowMin: string | null;
  windowMax: string | null;
  unconstrainedReading: string | null;
  plausibilityReason: string | null;
}

/** The readings columns behind StoredPlausibility, for a query that joins readings as `r`. */
export const storedPlausibilityColumns = [
  sql<Plausibility | null>`r.plausibility`.as('plausibility'),
  sql<string | null>`r.reference_reading`.as('referenceReading'),
  sql<ReferenceSource | null>`r.reference_source`.as('referenceSource'),
  sql<string | null>`r.window_min`.as('windowMin'),
  sql<string | null>`r.window_max`.as('windowMax'),
  sql<string | null>`r.unconstrained_reading`.as('unconstrainedReading'),
  sql<string | null>`r.plausibility_reason`.as('plausibilityReason'),
];

/** plausibilityJson of a stored reading; null for a submission with no reading. */
export function storedPlausibilityJson(stored: StoredPlausibility) {
  if (!stored.plausibility) return null;
  const { referenceReading, referenceSource, windowMin, windowMax } = stored;
  return plausibilityJson(
    {
      plausibility: stored.plausibility,
      unconstrainedReading: stored.unconstrainedReading ?? undefined,
      plausibilityReason: stored.plausibilityReason ?? undefined,
    },
    {
      reference: referenceReading && referenceSource ? { reading: referenceReading, source: referenceSource, readAt: null } : undefined,
      window:
        referenceReading && windowMin !== null && windowMax !== null
          ? { reference: referenceReading, min: Number(windowMin), max: Number(windowMax) }
          : undefined,
    },
  );
}

/**
 * Whether a submission's value can be trusted: a person corrected it (`c`, its newest correction), or
 * it was read (`r`) and the reading was not implausible. The meter's next reference, its last trusted
 * reading and its consumption all come from such submissions.
 */
export const isTrusted = sql<SqlBool>`(c.reading IS NOT NULL OR (r.reading IS NOT NULL AND r.plausibility <> 'implausible'))`;

async function lastTrustedReading(db: Db, meterPointId: string, before: { id: string }): Promise<MeterReference | undefined> {
  const row = await db
    .selectFrom('meters as m')
    .leftJoin('readings as r', 'r.meter_id', 'm.id')
    .leftJoinLateral(
      (eb) => eb.selectFrom('reading_corrections').select('reading').whereRef('meter_id', '=', 'm.id').orderBy('id', 'desc').limit(1).as('c'),
      (join) => join.onTrue(),
    )
    .select(['m.created_at', 'm.previous_reading', 'm.previous_read_at', 'r.reading', 'r.plausibility', 'c.reading as corrected'])
    .where('m.meter_point_id', '=', meterPointId)
    .where('m.id', '<', before.id)
    .where((eb) => eb.or([isTrusted, eb('m.previous_reading', 'is not', null)]))
    .orderBy('m.id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!row) return undefined;
  if (row.corrected) return { reading: row.corrected, source: 'correction', readAt: row.created_at };
  if (row.reading && row.plausibility !== 'implausible') return { reading: row.reading, source: 'reading', readAt: row.created_at };
  return { reading: row.previous_reading!, source: 'previous_reading', readAt: row.previous_read_at };
}

/** Readings have at most a few decimals; this keeps float noise (0.1 + 0.2) out of the window. */
function roundVolume(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
