import type { Static } from '@sinclair/typebox';
import type { Config } from '../config.ts';
import type { Db, Tx } from '../db/database.ts';
import type { ServiceDeps } from '../deps.ts';
import { newestEachDay, newestFirst } from '../pipeline/expect-reading.ts';
import { MAX_INTERVALS } from '../plausibility-policy.ts';
import { fastestWheelStep, lowestNextValue } from '../readers/layout.ts';
import type { MeterAnomaly } from '../schemas/meters.ts';
import { queueAccountEvent } from '../webhooks/deliver.ts';
import { roundVolume, trustedSubmissions } from './consumption.ts';
import { type UsualConsumption, usualAllowance, usualConsumption } from './usual-consumption.ts';

/**
 * Meters that need a visit (docs/readings.md, "Meters that need a visit"). Judged on a meter's trusted values
 * (corrections and confirmations, manual readings, readings nobody flagged) each time one of them
 * is added or changes. An anomaly is an episode: it opens when the condition starts, which sends
 * `meter.anomaly` once, and closes when the condition ends; a later start is a new episode.
 *
 * - stopped: the trusted values stand still (within one step of the fastest wheel) for
 *   ANOMALY_STOPPED_DAYS, on trusted readings of at least STOPPED_MIN_READING_DAYS days, while the
 *   meter's own history before says it is used. Closes when it moves again.
 * - backwards: a trusted value below the one before it, by more than a wheel half-way. Closes with
 *   the next trusted value that is not a further drop (a replaced meter runs on from its new value).
 * - leak: over the last ANOMALY_LEAK_DAYS (at least), more used than usualAllowance with the factor
 *   ANOMALY_LEAK_FACTOR, by the usual consumption before that span. Closes when a span's use is
 *   within the usual the episode opened with (not a usual that has learned the leak).
 *
 * A vacant meter uses nothing, and so does a stopped one: only the meter's history tells them
 * apart. With no use in its history, or too little history to estimate it, a meter standing still
 * is taken as vacant; one that was used, and stands still longer than its use allows, is stopped.
 * A flat whose tenants left is reported once, as stopped: a visit tells which it is.
 */

export const ANOMALY_KINDS = ['stopped', 'backwards', 'leak'] as const;
export type AnomalyKind = (typeof ANOMALY_KINDS)[number];
export type AnomalySettings = Config['anomaly'];
/** meter.anomaly's data less meter_id, and what the meters list shows. */
export type AnomalyJson = Static<typeof MeterAnomaly>;

/** Readings keep arriving: a stop is seen on trusted readings of at least this many days, its first one included. */
export const STOPPED_MIN_READING_DAYS = 3;
/**
 * A meter stands still for a reason only when its usual consumption would have moved it at least
 * this much over the time it stood, m³, and at least STOPPED_MIN_EXPECTED_STEPS steps of its fastest
 * wheel (a whole-unit counter shows a cubic metre or two late). Less: a vacant flat, or nearly one.
 */
export const STOPPED_MIN_EXPECTED_M3 = 1;
export const STOPPED_MIN_EXPECTED_STEPS = 3;

const DAY_MS = 86_400_000;

/** A trusted value of a meter: what it showed, when, and the submission it is the value of. */
export interface TrustedValue {
  submissionId: string;
  referenceId: string;
  at: Date;
  reading: string;
  value: number;
}

/** What the check reads of a meter's trusted values, newest first. */
export interface MeterValues {
  /** The newest two. */
  latest: TrustedValue[];
  /** The newest, then the last of each earlier UTC day that has one: a meter read every minute weighs no more. */
  daily: TrustedValue[];
}

/** A condition found: since when, the two trusted values it was found between, and the usual it was judged by. */
export interface Anomaly {
  kind: AnomalyKind;
  since: Date;
  from: TrustedValue;
  to: TrustedValue;
  usual: UsualConsumption | null;
  /** A leak's limit over the span, m³. */
  limit: number | null;
}

/** Of an open episode, what decides whether it goes on: the value a stop stands at, the usual a leak opened against. */
export interface OpenEpisode {
  kind: AnomalyKind;
  reading: string;
  usual: UsualConsumption | null;
}

/** The episodes a meter's values open, and the kinds of its open episodes that they close. */
export function judgeMeter(
  values: MeterValues,
  open: OpenEpisode[],
  settings: AnomalySettings,
): { opens: Anomaly[]; closes: AnomalyKind[] } {
  const opens: Anomaly[] = [];
  const closes: AnomalyKind[] = [];
  for (const kind of ANOMALY_KINDS) {
    const episode = open.find((candidate) => candidate.kind === kind);
    if (episode) {
      if (!GOES_ON[kind](values, settings, episode)) closes.push(kind);
    } else {
      const found = STARTS[kind](values, settings);
      if (found) opens.push(found);
    }
  }
  return { opens, closes };
}

const STARTS: Record<AnomalyKind, (values: MeterValues, settings: AnomalySettings) => Anomaly | undefined> = {
  stopped: (values, settings) => stopped(values.daily, settings),
  backwards: (values) => backwards(values.latest),
  leak: (values, settings) => leak(values.daily, settings),
};

const GOES_ON: Record<AnomalyKind, (values: MeterValues, settings: AnomalySettings, episode: OpenEpisode) => boolean> =
  {
    stopped: (values, _settings, episode) => standsAt(values.latest[0], episode.reading),
    backwards: (values) => backwards(values.latest) !== undefined,
    leak: (values, settings, episode) => leak(values.daily, settings, episode.usual ?? undefined) !== undefined,
  };

function stopped(daily: TrustedValue[], settings: AnomalySettings): Anomaly | undefined {
  const newest = daily[0];
  if (!newest) return undefined;
  const standing = daily.findIndex((value) => !standsAt(value, newest.reading));
  // Nothing before it moved: no history of use (vacant, or new).
  if (standing < 0) return undefined;
  const start = daily[standing - 1]!;
  const days = daysBetween(start, newest);
  if (days < settings.stoppedDays || standing < STOPPED_MIN_READING_DAYS) return undefined;
  const usual = ownUsual(daily.slice(standing - 1));
  const expected = usual.perDay * days;
  if (
    usual.basis !== 'history' ||
    expected < Math.max(STOPPED_MIN_EXPECTED_M3, STOPPED_MIN_EXPECTED_STEPS * fastestWheelStep(newest.reading))
  )
    return undefined;
  return { kind: 'stopped', since: start.at, from: start, to: newest, usual, limit: null };
}

function backwards([newest, previous]: TrustedValue[]): Anomaly | undefined {
  if (!newest || !previous || newest.value >= lowestNextValue(previous.reading)) return undefined;
  return { kind: 'backwards', since: newest.at, from: previous, to: newest, usual: null, limit: null };
}

/** `known`: the usual an open episode was found against, so that a leak going on is not learned as usual. */
function leak(daily: TrustedValue[], settings: AnomalySettings, known?: UsualConsumption): Anomaly | undefined {
  const newest = daily[0];
  if (!newest) return undefined;
  const startIndex = daily.findIndex((value) => daysBetween(value, newest) >= settings.leakDays);
  if (startIndex < 0) return undefined;
  const start = daily[startIndex]!;
  const usual = known ?? ownUsual(daily.slice(startIndex));
  if (usual.basis !== 'history') return undefined;
  const limit = usualAllowance(usual, daysBetween(start, newest), settings.leakFactor);
  if (newest.value - start.value <= limit) return undefined;
  return { kind: 'leak', since: start.at, from: start, to: newest, usual, limit };
}

/**
 * The usual consumption from the meter's own values alone (basis `default` when too few): an account's default says
 * nothing of this meter.
 */
function ownUsual(values: TrustedValue[]): UsualConsumption {
  return usualConsumption(values, 0);
}

/** Within one step of the reading's fastest wheel: a wheel half-way may be read either way. */
function standsAt(value: TrustedValue | undefined, reading: string): boolean {
  return value !== undefined && roundVolume(Math.abs(value.value - Number(reading))) <= fastestWheelStep(reading);
}

function daysBetween(earlier: TrustedValue, later: TrustedValue): number {
  return (later.at.getTime() - earlier.at.getTime()) / DAY_MS;
}

/** meter.anomaly's data, less meter_id: what the episode keeps and the meters list shows. */
export function anomalyJson(anomaly: Anomaly): AnomalyJson {
  const { from, to, usual } = anomaly;
  const days = daysBetween(from, to);
  return {
    kind: anomaly.kind,
    since: anomaly.since.toISOString(),
    reference_id: to.referenceId,
    span: { from: from.at.toISOString(), to: to.at.toISOString(), days: Math.round(days * 100) / 100 },
    figures: {
      from_reading: from.reading,
      to_reading: to.reading,
      consumption_m3: roundVolume(to.value - from.value),
      usual_m3_per_day: usual?.perDay ?? null,
      usual_spread_m3_per_day: usual?.spread ?? null,
      usual_m3: usual ? roundVolume(usual.perDay * days) : null,
      limit_m3: anomaly.limit,
    },
  };
}

function openEpisode(row: { kind: AnomalyKind; data: AnomalyJson }): OpenEpisode {
  const { to_reading: reading, usual_m3_per_day: perDay, usual_spread_m3_per_day: spread } = row.data.figures;
  return { kind: row.kind, reading, usual: perDay === null ? null : { perDay, spread: spread ?? 0, basis: 'history' } };
}

/**
 * Inside the caller's transaction, once a trusted value of the meter point was added or changed:
 * closes the episodes that ended, opens those that start and queues `meter.anomaly` for each
 * opened (rolled back with the change). Returns the kinds opened, to be counted once committed.
 */
export async function checkMeterAnomalies(
  tx: Tx,
  deps: Pick<ServiceDeps, 'boss' | 'config'>,
  meterPointId: string,
): Promise<AnomalyKind[]> {
  // One check of a meter at a time, each reading what the one before committed: no episode is
  // opened twice by readings recorded at once.
  const point = await tx
    .selectFrom('meter_points')
    .select(['account_id', 'external_id'])
    .where('id', '=', meterPointId)
    .forNoKeyUpdate()
    .executeTakeFirstOrThrow();
  const settings = deps.config.anomaly;
  const open = await tx
    .selectFrom('meter_anomalies')
    .select(['kind', 'data'])
    .where('meter_point_id', '=', meterPointId)
    .where('closed_at', 'is', null)
    .execute();
  const { opens, closes } = judgeMeter(
    await meterValues(tx, meterPointId, historyDays(settings)),
    open.map(openEpisode),
    settings,
  );
  if (closes.length > 0) {
    await tx
      .updateTable('meter_anomalies')
      .set({ closed_at: new Date() })
      .where('meter_point_id', '=', meterPointId)
      .where('kind', 'in', closes)
      .where('closed_at', 'is', null)
      .execute();
  }
  for (const anomaly of opens) {
    const data = anomalyJson(anomaly);
    await tx
      .insertInto('meter_anomalies')
      .values({
        meter_point_id: meterPointId,
        kind: anomaly.kind,
        submission_id: anomaly.to.submissionId,
        data: JSON.stringify(data),
      })
      .execute();
    await queueAccountEvent(tx, deps.boss, {
      accountId: point.account_id,
      type: 'meter.anomaly',
      data: { meter_id: point.external_id, ...data },
      submissionId: anomaly.to.submissionId,
    });
  }
  return opens.map((anomaly) => anomaly.kind);
}

/**
 * Days of a meter the check reads: the longer span, and enough days before it for MAX_INTERVALS of usual consumption
 * (two days may be less than one apart).
 */
function historyDays(settings: AnomalySettings): number {
  return Math.max(settings.stoppedDays, settings.leakDays) + 2 * MAX_INTERVALS + 1;
}

/**
 * The meter point's newest two trusted values, and its daily ones: each a step of the index
 * submissions_meter_point back from the day before, so a meter read every minute costs no more to
 * judge than one read every day.
 */
async function meterValues(tx: Tx, meterPointId: string, days: number): Promise<MeterValues> {
  const rows = () => trustedSubmissions(tx, meterPointId);
  const latest = await newestFirst(rows()).limit(2).execute();
  const daily = await newestEachDay(tx, rows, 'readAt', days);
  return { latest: latest.map(trustedValue), daily: daily.map(trustedValue) };
}

function trustedValue(row: {
  submissionId: string;
  referenceId: string;
  readAt: Date;
  reading: string;
  value: string;
}): TrustedValue {
  return {
    submissionId: row.submissionId,
    referenceId: row.referenceId,
    at: row.readAt,
    reading: row.reading,
    value: Number(row.value),
  };
}

/** The newest first of the meter point's open episodes. */
export async function openAnomalies(db: Db, meterPointId: string): Promise<AnomalyJson[]> {
  const rows = await db
    .selectFrom('meter_anomalies')
    .select('data')
    .where('meter_point_id', '=', meterPointId)
    .where('closed_at', 'is', null)
    .orderBy('opened_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map((row) => row.data);
}
