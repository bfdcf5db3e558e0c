import type { Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DomainError } from '../../errors.ts';
import { confirmReading, correctReading } from '../../meters/corrections.ts';
import { decodeCursor, encodeCursor, HISTORY_MAX_LIMIT, meterHistory } from '../../meters/history.ts';
import { addManualReading } from '../../meters/manual-readings.ts';
import { METER_LIST_MAX_LIMIT, meterList, type MeterSummary } from '../../meters/meter-list.ts';
import {
  FRACTIONAL_WHEELS_LIMIT,
  isMaxFlow,
  isLayoutSetting,
  MAX_FLOW_LIMIT,
  setMeterSettings,
  WHOLE_WHEELS_LIMIT,
  type SettingsChange,
} from '../../meters/meter-points.ts';
import type { MeterLayout } from '../../readers/layout.ts';
import { submissionJson } from '../../meters/records.ts';
import { authenticate, type AuthenticatedKey } from '../../pipeline/authenticate.ts';
import { checkSubscription } from '../../pipeline/check-subscription.ts';
import { METER_ID_RULE, meterIdField, readAtField, readingField } from '../../pipeline/identify-meter.ts';
import {
  Layout,
  ManualReading,
  MeterHistory,
  type MeterHistoryQuery,
  MeterList,
  MeterSettingsChange,
  type MetersQuery,
  ReadingConfirmation,
  ReadingCorrection,
} from '../../schemas/meters.ts';
import { checkedBody, isRecord, refuseUnknownKeys } from './body.ts';
import { checkedQuery } from './query.ts';

/** Of a meter's history and of the meters list. */
const DEFAULT_HISTORY_LIMIT = 20;

const CURSOR_RULE = (field: string) => `${field} must be a next_cursor this API returned`;

declare module 'fastify' {
  interface FastifyRequest {
    apiKey: AuthenticatedKey | null;
  }
}

type HistoryRequest = { Params: { meter_id: string }; Querystring: Static<typeof MeterHistoryQuery> };
type SettingsRequest = { Params: { meter_id: string }; Body: unknown };
type CorrectionRequest = { Params: { reference_id: string }; Body: unknown };
type ConfirmationRequest = { Params: { reference_id: string } };
type ManualReadingRequest = { Params: { meter_id: string }; Body: unknown };

/**
 * A meter's history, its settings, its manual readings, and corrections and confirmations of
 * readings. Authenticated like the submit endpoints; none counts as a request. History, corrections
 * and confirmations need no current subscription: a client can always see and fix its data.
 * Settings and manual readings do: they shape the readings of photos to come, which only a
 * subscribed account may submit, and they may create meters.
 */
export default async function meterRoutes(app: FastifyInstance): Promise<void> {
  const { db } = app.deps;
  app.decorateRequest('apiKey', null);
  app.addHook('onRequest', async (request) => {
    request.apiKey = await authenticate(db, request.headers.authorization);
  });

  app.get<{ Querystring: Static<typeof MetersQuery> }>(
    '/meters',
    checkedQuery(MeterList, METERS_QUERY_RULES),
    async (request) => {
      const { limit, starting_after: startingAfter, meter_id_prefix: prefix } = request.query;
      const page = await meterList(db, apiKey(request).accountId, {
        limit: limit ?? DEFAULT_HISTORY_LIMIT,
        startingAfter,
        prefix,
      });
      return {
        data: page.meters.map(meterSummaryJson),
        has_more: page.nextCursor !== null,
        next_cursor: page.nextCursor,
      };
    },
  );

  app.get<HistoryRequest>(
    '/meters/:meter_id/readings',
    checkedQuery(MeterHistory, HISTORY_QUERY_RULES),
    async (request) => {
      const meterId = meterIdField(request.params.meter_id);
      const limit = request.query.limit ?? DEFAULT_HISTORY_LIMIT;
      const before = historyStart(request.query);
      const history = await meterHistory(db, apiKey(request).accountId, meterId, { limit, before });
      if (!history) throw new DomainError('not_found', 'meter_id', `No meter "${meterId}" in your account`);
      return {
        meter_id: meterId,
        readings: history.records.map(submissionJson),
        has_more: history.nextBefore !== null,
        next_cursor: history.nextBefore ? encodeCursor(history.nextBefore) : null,
      };
    },
  );

  /**
   * The meter's own max flow for its plausibility window (null: the account's) and its counter
   * layout (null: as its readings show it); names a meter before its first photo too.
   */
  app.patch<SettingsRequest>('/meters/:meter_id', checkedBody(MeterSettingsChange), async (request) => {
    checkSubscription(apiKey(request).subscription);
    const meterId = meterIdField(request.params.meter_id);
    const settings = await setMeterSettings(db, apiKey(request).accountId, meterId, settingsChange(request.body));
    return {
      meter_id: settings.meterId,
      max_flow_m3_per_hour: settings.maxFlow,
      effective_max_flow_m3_per_hour: settings.effectiveMaxFlow,
      layout: settings.layout && layoutJson(settings.layout),
      effective_layout: settings.effectiveLayout && {
        ...layoutJson(settings.effectiveLayout),
        shown_by: settings.effectiveLayout.shownBy ?? null,
      },
    };
  });

  app.post<CorrectionRequest>(
    '/meter-reading/:reference_id/correction',
    checkedBody(ReadingCorrection),
    async (request) => {
      const key = apiKey(request);
      const reading = readingField((request.body as { reading?: unknown } | null)?.reading, 'reading');
      const corrected = await correctReading(app.deps, key.accountId, request.params.reference_id, reading, {
        apiKeyId: key.keyId,
        label: `api key ${key.keyId}`,
      });
      if (corrected.outcome === 'not_found')
        throw new DomainError('not_found', 'reference_id', 'No submission with this reference_id in your account');
      if (corrected.outcome === 'not_finished')
        throw new DomainError(
          'conflict',
          'reference_id',
          'The submission is still being read: correct it once it has finished',
        );
      return submissionJson(corrected.record);
    },
  );

  /** A person confirms the machine's reading as it stands (src/meters/corrections.ts): no body. */
  app.post<ConfirmationRequest>(
    '/meter-reading/:reference_id/confirmation',
    { schema: ReadingConfirmation },
    async (request) => {
      const key = apiKey(request);
      const confirmed = await confirmReading(app.deps, key.accountId, request.params.reference_id, {
        apiKeyId: key.keyId,
        label: `api key ${key.keyId}`,
      });
      if (confirmed.outcome === 'not_found')
        throw new DomainError('not_found', 'reference_id', 'No submission with this reference_id in your account');
      if (confirmed.outcome === 'not_finished')
        throw new DomainError(
          'conflict',
          'reference_id',
          'The submission is still being read: confirm it once it has finished',
        );
      if (confirmed.outcome === 'nothing_to_confirm')
        throw new DomainError(
          'conflict',
          'reference_id',
          'The submission failed and has no reading to confirm: correct it with the reading instead',
        );
      return submissionJson(confirmed.record);
    },
  );

  /** A reading a person took without a photo (src/meters/manual-readings.ts). */
  app.post<ManualReadingRequest>('/meters/:meter_id/readings', checkedBody(ManualReading), async (request, reply) => {
    const key = apiKey(request);
    checkSubscription(key.subscription);
    const meterId = meterIdField(request.params.meter_id);
    const body = (request.body ?? {}) as { reading?: unknown; read_at?: unknown };
    const reading = readingField(body.reading, 'reading');
    const readAt = readAtField(body.read_at, 'read_at');
    const record = await addManualReading(app.deps, key, meterId, reading, readAt);
    return reply.code(201).send(submissionJson(record));
  });
}

/** What each parameter of GET /api/meters must be, in words a client can act on. */
const METERS_QUERY_RULES = {
  meter_id_prefix: METER_ID_RULE.replace(/^meter_id/, 'meter_id_prefix'),
  limit: `limit must be an integer from 1 to ${METER_LIST_MAX_LIMIT}`,
  starting_after: 'starting_after must be the next_cursor of the previous page (a meter_id)',
};

/** What each parameter of GET /api/meters/{meter_id}/readings must be. */
const HISTORY_QUERY_RULES = {
  limit: `limit must be an integer from 1 to ${HISTORY_MAX_LIMIT}`,
  starting_after: CURSOR_RULE('starting_after'),
  cursor: CURSOR_RULE('cursor'),
};

function meterSummaryJson(meter: MeterSummary) {
  const last = meter.lastTrusted;
  return {
    meter_id: meter.meterId,
    created_at: meter.createdAt.toISOString(),
    last_trusted_reading: last && {
      reading: last.reading,
      value: last.value,
      source: last.source,
      read_at: last.readAt.toISOString(),
      reference_id: last.referenceId,
    },
    consumption_30_days_m3: meter.consumption30Days,
    waiting_for_review: meter.waitingForReview,
    anomaly: meter.anomaly,
  };
}

/** The settings a PATCH body gives, each checked: at least one of them. */
function settingsChange(body: unknown): SettingsChange {
  const given = (isRecord(body) ? body : {}) as {
    max_flow_m3_per_hour?: unknown;
    layout?: unknown;
  };
  const change: SettingsChange = {};
  if (given.max_flow_m3_per_hour !== undefined) {
    const maxFlow = given.max_flow_m3_per_hour;
    if (maxFlow !== null && !isMaxFlow(maxFlow)) {
      throw new DomainError(
        'invalid',
        'max_flow_m3_per_hour',
        `max_flow_m3_per_hour must be a number above 0 and at most ${MAX_FLOW_LIMIT}, or null for the account's default`,
      );
    }
    change.maxFlow = maxFlow;
  }
  if (given.layout !== undefined) change.layout = layoutField(given.layout);
  if (change.maxFlow === undefined && change.layout === undefined) {
    throw new DomainError('invalid', 'request', 'The body sets max_flow_m3_per_hour, layout or both');
  }
  return change;
}

/** The unit a layout's whole-unit wheels count: the service reads, judges and bills in m³ only. */
const LAYOUT_UNIT = 'm3';

/** `{"whole_wheels":5,"fractional_wheels":3,"unit":"m3"}`, or null: back to the layout the meter's readings show. */
function layoutField(value: unknown): Pick<MeterLayout, 'whole' | 'fraction'> | null {
  if (value === null) return null;
  if (isRecord(value)) refuseUnknownKeys(value, Object.keys(Layout.properties), 'layout');
  const {
    whole_wheels: whole,
    fractional_wheels: fraction,
    unit,
  } = (typeof value === 'object' ? value : {}) as Record<string, unknown>;
  const layout = { whole, fraction };
  if (!isLayoutSetting(layout)) {
    throw new DomainError(
      'invalid',
      'layout',
      `layout must be {"whole_wheels": 1–${WHOLE_WHEELS_LIMIT}, "fractional_wheels": 0–${FRACTIONAL_WHEELS_LIMIT}, "unit": "${LAYOUT_UNIT}"} (a 5 + 3 counter: 5 and 3), or null for the layout the meter's readings show`,
    );
  }
  if (unit !== LAYOUT_UNIT) {
    throw new DomainError(
      'invalid',
      'layout',
      `layout.unit must be "${LAYOUT_UNIT}": the whole-unit wheels count m³ (windows, usual consumption and exports are in m³)`,
    );
  }
  return layout;
}

function layoutJson(layout: Pick<MeterLayout, 'whole' | 'fraction'>) {
  return { whole_wheels: layout.whole, fractional_wheels: layout.fraction, unit: LAYOUT_UNIT };
}

/** Where the page starts: `starting_after`, or `cursor`, its deprecated name; a `next_cursor` either way. */
function historyStart(query: HistoryRequest['Querystring']): string | undefined {
  if (query.starting_after !== undefined && query.cursor !== undefined) {
    throw new DomainError('invalid', 'cursor', 'cursor is the old name of starting_after: give only starting_after');
  }
  const [field, value] =
    query.cursor === undefined ? ['starting_after', query.starting_after] : ['cursor', query.cursor];
  if (value === undefined) return undefined;
  const before = decodeCursor(value);
  if (!before) throw new DomainError('invalid', field, CURSOR_RULE(field));
  return before;
}

function apiKey(request: FastifyRequest): AuthenticatedKey {
  if (!request.apiKey) throw new Error('the onRequest authentication did not run');
  return request.apiKey;
}
