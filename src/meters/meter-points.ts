import { sql } from 'kysely';
import { checkBound, lockAccount } from '../accounts/account-bounds.ts';
import type { Db, Tx } from '../db/database.ts';
import { layoutSetting, meterLayout } from '../pipeline/expect-reading.ts';
import { DomainError } from '../errors.ts';
import { type MeterLayout, outsideLayoutReason } from '../readers/layout.ts';

/** The account's meter point named `externalId`, created on its first submission. */
export async function upsertMeterPoint(db: Db, accountId: string, externalId: string): Promise<string> {
  const point = await db
    .insertInto('meter_points')
    .values({ account_id: accountId, external_id: externalId })
    // A no-op update, so that RETURNING gives the id of an existing row too.
    .onConflict((conflict) => conflict.columns(['account_id', 'external_id']).doUpdateSet({ external_id: externalId }))
    .returning('id')
    .executeTakeFirstOrThrow();
  return point.id;
}

export async function findMeterPoint(db: Db, accountId: string, externalId: string) {
  return db
    .selectFrom('meter_points')
    .select(['id', 'external_id as externalId'])
    .where('account_id', '=', accountId)
    .where('external_id', '=', externalId)
    .executeTakeFirst();
}

/** The largest flow a setting may name, in m³/h: beyond any water meter, so a typo is caught. */
export const MAX_FLOW_LIMIT = 10_000;

export function isMaxFlow(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 && value <= MAX_FLOW_LIMIT;
}

/**
 * The meters a setting may create in one account: a utility has many, so this is no product limit,
 * only a stop for a client naming meters in a loop. A submission's new meter_id is not held to it
 * (each one counts against the plan).
 */
export const METER_POINTS_PER_ACCOUNT = 100_000;

/** The wheels a layout setting may name: more than any water meter has, so a typo is caught. */
export const WHOLE_WHEELS_LIMIT = 10;
export const FRACTIONAL_WHEELS_LIMIT = 6;

function isWheelCount(value: unknown, least: number, most: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= least && value <= most;
}

/**
 * Whether a layout setting (the API's, the dashboard's) may name these wheels: 1–WHOLE_WHEELS_LIMIT whole-unit
 * ones and 0–FRACTIONAL_WHEELS_LIMIT fractional ones.
 */
export function isLayoutSetting(layout: {
  whole: unknown;
  fraction: unknown;
}): layout is Pick<MeterLayout, 'whole' | 'fraction'> {
  return isWheelCount(layout.whole, 1, WHOLE_WHEELS_LIMIT) && isWheelCount(layout.fraction, 0, FRACTIONAL_WHEELS_LIMIT);
}

/** A change of a meter's settings: each one given is set (null: cleared, the account's or the readings' again). */
export interface SettingsChange {
  maxFlow?: number | null;
  layout?: Pick<MeterLayout, 'whole' | 'fraction'> | null;
}

/** Sets what `change` gives of one meter's settings; creates the meter point if needed, within the bound. */
export async function setMeterSettings(db: Db, accountId: string, externalId: string, change: SettingsChange) {
  return db.transaction().execute(async (tx) => {
    const existing = await tx
      .updateTable('meter_points')
      .set(settingColumns(change))
      .where('account_id', '=', accountId)
      .where('external_id', '=', externalId)
      .returning('id')
      .executeTakeFirst();
    return meterSettings(tx, existing?.id ?? (await createMeterPoint(tx, accountId, externalId, change)));
  });
}

function settingColumns(change: SettingsChange) {
  return {
    ...(change.maxFlow === undefined ? {} : { max_flow_m3_per_hour: change.maxFlow }),
    ...(change.layout === undefined
      ? {}
      : { whole_wheels: change.layout?.whole ?? null, fractional_wheels: change.layout?.fraction ?? null }),
  };
}

/**
 * The account's meter point named `externalId`; created within the bound if it has none (a manual reading of a new
 * meter).
 */
export async function meterPointWithinBound(tx: Tx, accountId: string, externalId: string): Promise<string> {
  return (await findMeterPoint(tx, accountId, externalId))?.id ?? createMeterPoint(tx, accountId, externalId, {});
}

/**
 * A meter created with the settings `change` gives; it leaves those it does not give as a concurrent request set them.
 */
async function createMeterPoint(
  tx: Tx,
  accountId: string,
  externalId: string,
  change: SettingsChange,
): Promise<string> {
  await lockAccount(tx, accountId);
  const { count } = await tx
    .selectFrom('meter_points')
    .select(sql<number>`count(*)::int`.as('count'))
    .where('account_id', '=', accountId)
    // Not itself: a concurrent request for the same new meter may have created it while this one waited for the lock.
    .where('external_id', '<>', externalId)
    .executeTakeFirstOrThrow();
  checkBound(
    count,
    METER_POINTS_PER_ACCOUNT,
    'meters',
    `The account has ${METER_POINTS_PER_ACCOUNT} meters, the most a setting may create: a new meter_id is named by submitting its first photo`,
  );
  const settings = settingColumns(change);
  const point = await tx
    .insertInto('meter_points')
    .values({ account_id: accountId, external_id: externalId, ...settings })
    // A submission, which does not take the account's lock, may have created it meanwhile.
    .onConflict((conflict) =>
      conflict.columns(['account_id', 'external_id']).doUpdateSet({ external_id: externalId, ...settings }),
    )
    .returning('id')
    .executeTakeFirstOrThrow();
  return point.id;
}

/**
 * A meter's own max flow (null: none) and the one its plausibility windows use; its own layout (null:
 * none set) and the one its next reading is judged in (null: not known).
 */
export async function meterSettings(db: Db, meterPointId: string) {
  const row = await db
    .selectFrom('meter_points as p')
    .innerJoin('accounts as a', 'a.id', 'p.account_id')
    .select([
      'p.external_id',
      'p.max_flow_m3_per_hour',
      'p.whole_wheels',
      'p.fractional_wheels',
      'a.max_flow_m3_per_hour as account_max_flow',
    ])
    .where('p.id', '=', meterPointId)
    .executeTakeFirstOrThrow();
  const own = row.max_flow_m3_per_hour === null ? null : Number(row.max_flow_m3_per_hour);
  return {
    meterId: row.external_id,
    maxFlow: own,
    effectiveMaxFlow: own ?? Number(row.account_max_flow),
    layout: layoutSetting(row) ?? null,
    effectiveLayout: (await meterLayout(db, meterPointId)) ?? null,
  };
}

/** The account's default max flow, for meters without their own; false when there is no such account. */
export async function setAccountMaxFlow(db: Db, accountId: string, maxFlow: number): Promise<boolean> {
  const updated = await db
    .updateTable('accounts')
    .set({ max_flow_m3_per_hour: maxFlow })
    .where('id', '=', accountId)
    .executeTakeFirst();
  return updated.numUpdatedRows > 0n;
}

/**
 * A reading a person gives (a manual reading, a correction) has the meter's layout (meterLayout, but for the value of
 * the submission `except` that a correction replaces): one with a wheel more or less is a typo, or another meter, whose
 * layout is set first (PATCH). Taken as it came, it would become the meter's layout and flag every right reading
 * after it.
 */
export async function checkPersonsLayout(
  tx: Tx,
  meterPoint: { id: string; externalId: string },
  reading: string,
  except?: string,
): Promise<void> {
  const layout = await meterLayout(tx, meterPoint.id, except);
  const otherLayout = layout && outsideLayoutReason(reading, layout);
  if (otherLayout) throw new DomainError('invalid', 'reading', `Meter ${meterPoint.externalId}: ${otherLayout}`);
}
