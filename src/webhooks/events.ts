import { ENVIRONMENT } from '../config.ts';
import { READING_EXAMPLE } from '../schemas/meter-reading.ts';

/**
 * Every event an endpoint can subscribe to, in the order the dashboard's checkboxes show them.
 * The CLI's --events, the dashboard and the endpoint check all read this list.
 */
export const WEBHOOK_EVENTS = [
  'reading.completed',
  'reading.failed',
  'reading.corrected',
  'usage.threshold_reached',
  'usage.limit_reached',
  'subscription.created',
  'subscription.renewed',
  'subscription.updated',
  'subscription.cancelled',
  'subscription.expired',
  'webhook_endpoint.disabled',
  'meter.anomaly',
] as const;

export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** What an endpoint receives when it chooses nothing: the results of the readings it submits. */
export const DEFAULT_WEBHOOK_EVENTS: readonly WebhookEvent[] = ['reading.completed', 'reading.failed'];

/** `webhook.test` is sent by the test button only; endpoints cannot subscribe to it. */
export type DeliveryEvent = WebhookEvent | 'webhook.test';

export const TEST_EVENT_KINDS: readonly DeliveryEvent[] = ['webhook.test', ...WEBHOOK_EVENTS];

/** Share of the plan's monthly limit at which `usage.threshold_reached` is sent. */
export const USAGE_THRESHOLD_SHARE = 0.8;

const exampleTerms = {
  plan: 'starter',
  status: 'active',
  period_start: '2026-11-01T00:00:00.000Z',
  period_end: '2026-12-01T00:00:00.000Z',
};
const exampleSubscription = { account_id: 1, ...exampleTerms };

/** What each event's `data` looks like; the test button sends these, marked `"test": true`. */
export const EXAMPLE_EVENT_DATA: Record<DeliveryEvent, Record<string, unknown>> = {
  'webhook.test': {},
  'reading.completed': { reference_id: '7c0e4a4e-4b1f-4a52-9a3f-2d1f0e6c9b11', ...READING_EXAMPLE },
  'reading.failed': {
    reference_id: '7c0e4a4e-4b1f-4a52-9a3f-2d1f0e6c9b11',
    error: { code: 'unreadable', message: 'No reader found a reading in the photo' },
    needs_review: true,
  },
  'reading.corrected': {
    reference_id: '7c0e4a4e-4b1f-4a52-9a3f-2d1f0e6c9b11',
    status: 'completed',
    created_at: '2026-11-22T10:14:58.120Z',
    finished_at: '2026-11-22T10:15:00.000Z',
    ...READING_EXAMPLE,
    confidence: 41,
    escalated: true,
    model: ENVIRONMENT.properties.OPENAI_MODEL.default,
    correction: {
      reading: '02390.716',
      value: 2390.716,
      corrected_by: 'billing@example.com',
      corrected_at: '2026-11-23T08:02:11.000Z',
    },
  },
  'usage.threshold_reached': { month: '2026-11', count: 800, limit: 1000, plan: 'starter' },
  'usage.limit_reached': { month: '2026-11', count: 1000, limit: 1000, plan: 'starter' },
  'subscription.created': { ...exampleSubscription, previous: null },
  'subscription.renewed': { ...exampleSubscription, period_end: '2027-01-01T00:00:00.000Z', previous: exampleTerms },
  'subscription.updated': { ...exampleSubscription, plan: 'pro', previous: exampleTerms },
  'subscription.cancelled': { ...exampleSubscription, status: 'cancelled', previous: exampleTerms },
  'subscription.expired': { ...exampleSubscription, status: 'expired', previous: null },
  'webhook_endpoint.disabled': {
    endpoint_id: 7,
    url: 'https://example.com/meterlens',
    reason:
      'Every attempt since 2026-11-21T08:00:00.000Z failed (31 attempts, over 24 hours); the last: The receiver answered HTTP 503 Service Unavailable',
    failing_since: '2026-11-21T08:00:00.000Z',
    failed_attempts: 31,
  },
  'meter.anomaly': {
    meter_id: 'SN-4711',
    kind: 'leak',
    since: '2026-11-14T08:00:00.000Z',
    reference_id: '7c0e4a4e-4b1f-4a52-9a3f-2d1f0e6c9b11',
    span: { from: '2026-11-14T08:00:00.000Z', to: '2026-11-21T08:00:00.000Z', days: 7 },
    figures: {
      from_reading: '00606.494',
      to_reading: '00618.994',
      consumption_m3: 12.5,
      usual_m3_per_day: 0.3,
      usual_spread_m3_per_day: 0.05,
      usual_m3: 2.1,
      limit_m3: 5.2,
    },
  },
};
