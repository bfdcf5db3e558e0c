import { Type, type TSchema } from '@sinclair/typebox';
import { USAGE_THRESHOLD_SHARE, type DeliveryEvent } from '../webhooks/events.ts';
import { Failure, Submission, NeedsReview, ReadingFields, ReferenceId } from './meter-reading.ts';
import { MeterAnomaly } from './meters.ts';
import { named, ref } from './named.ts';

const UsageMilestone = Type.Object(
  {
    month: Type.String({ description: 'The calendar month (UTC), e.g. "2026-11"' }),
    count: Type.Integer({ description: 'Accepted submissions this month' }),
    limit: Type.Integer({ description: 'The plan’s monthly request limit' }),
    plan: Type.String(),
  },
  { $id: 'UsageMilestone' },
);

const SubscriptionTerms = {
  plan: Type.String(),
  status: Type.Union([Type.Literal('active'), Type.Literal('expired'), Type.Literal('cancelled')]),
  period_start: Type.String({ format: 'date-time' }),
  period_end: Type.String({ format: 'date-time' }),
};

const SubscriptionChange = Type.Object(
  {
    account_id: Type.Integer(),
    ...SubscriptionTerms,
    previous: Type.Union([Type.Object(SubscriptionTerms), Type.Null()], { description: 'The terms before the change' }),
  },
  { $id: 'SubscriptionChange' },
);

/**
 * Every event an endpoint can receive, described for /openapi.json: keyed by the event list, so an
 * event added to it is not documented until its payload is.
 */
const WEBHOOK_EVENT_DATA: Record<DeliveryEvent, { summary: string; data: TSchema }> = {
  'webhook.test': {
    summary:
      'Sent by the dashboard’s “send test event” (an example of any other event is marked `"test": true` in its data)',
    data: Type.Object({ endpoint_id: Type.Integer() }),
  },
  'reading.completed': {
    summary: 'A submission was read',
    data: Type.Object({ reference_id: ReferenceId, ...ReadingFields }),
  },
  'reading.failed': {
    summary: 'A submission could not be read',
    data: Type.Object({ reference_id: ReferenceId, error: ref(Failure), needs_review: NeedsReview }),
  },
  'reading.corrected': {
    summary:
      'A person corrected or confirmed a reading (API or dashboard): the submission as GET shows it, the machine’s reading (or `error`) with the person’s `correction` beside it (equal to `reading`: a confirmation)',
    data: ref(Submission),
  },
  'usage.threshold_reached': {
    summary: `The month’s submissions reached ${USAGE_THRESHOLD_SHARE * 100}% of the plan’s limit (once a month)`,
    data: ref(UsageMilestone),
  },
  'usage.limit_reached': {
    summary: 'The month’s submissions reached the plan’s limit (once a month)',
    data: ref(UsageMilestone),
  },
  'subscription.created': { summary: 'The account got its first subscription', data: ref(SubscriptionChange) },
  'subscription.renewed': { summary: 'The subscription was extended on the same plan', data: ref(SubscriptionChange) },
  'subscription.updated': { summary: 'The subscription changed plan or period', data: ref(SubscriptionChange) },
  'subscription.cancelled': { summary: 'The subscription was cancelled', data: ref(SubscriptionChange) },
  'subscription.expired': {
    summary: 'The subscription’s period ended (once per period end)',
    data: ref(SubscriptionChange),
  },
  'webhook_endpoint.disabled': {
    summary:
      'Another endpoint of the account was disabled: it answered 410 Gone, or every attempt to it failed for a day',
    data: Type.Object({
      endpoint_id: Type.Integer({ description: 'The endpoint that was disabled' }),
      url: Type.String(),
      reason: Type.String({ description: 'Why, as the dashboard shows it' }),
      failing_since: Type.String({
        format: 'date-time',
        description: 'The first failed attempt of the run that ended in disabling it',
      }),
      failed_attempts: Type.Integer({ description: 'Attempts in a row that failed' }),
    }),
  },
  'meter.anomaly': {
    summary:
      'A meter needs a visit: it stopped, ran backwards or uses far more than usual (once per episode, when it starts)',
    data: Type.Object({ meter_id: Type.String(), ...MeterAnomaly.properties }),
  },
};

/**
 * Each event as it is POSTed: its name, when it was sent, its data; named for a generated client as
 * the event is (`reading.completed`: ReadingCompletedEvent), and received by the operation
 * `receiveReadingCompleted`.
 */
export const WEBHOOK_PAYLOADS = Object.entries(WEBHOOK_EVENT_DATA).map(([event, { summary, data }]) => ({
  event,
  summary,
  operationId: `receive${pascalCase(event)}`,
  payload: Type.Object(
    { event: Type.Literal(event), timestamp: Type.String({ format: 'date-time' }), data },
    { $id: `${pascalCase(event)}Event` },
  ),
}));

/** `webhook_endpoint.disabled` → `WebhookEndpointDisabled`. */
function pascalCase(event: string): string {
  return event
    .split(/[._]/)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('');
}

named(UsageMilestone, SubscriptionChange, ...WEBHOOK_PAYLOADS.map(({ payload }) => payload));
