import { randomBytes } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type { PgBoss } from 'pg-boss';
import { request } from 'undici';
import type { Config } from '../config.ts';
import { bossAdapter, type Db, type Tx } from '../db/database.ts';
import type { Database, DeliveryStatus } from '../db/schema.ts';
import { DomainError, requireId } from '../errors.ts';
import { observeWebhookAttempt } from '../metrics.ts';
import { enqueueDelivery } from '../queue.ts';
import { publicOnlyAgent } from './address-guard.ts';
import {
  disableEndpoint,
  endpointDisabledError,
  endpointNotFound,
  lockEndpoint,
  requireEndpointId,
} from './endpoints.ts';
import { EXAMPLE_EVENT_DATA, TEST_EVENT_KINDS, type DeliveryEvent, type WebhookEvent } from './events.ts';
import { webhookHeaders } from './signature.ts';

/**
 * Seconds between a failed attempt and the next one; the first attempt is immediate. After the
 * attempt that follows the last step (the 12th, about 70.7 hours after the first), a delivery
 * that never got a 2xx answer fails. A longer Retry-After replaces a step, up to the longest step.
 */
export const WEBHOOK_RETRY_DELAYS_SECONDS: readonly number[] = [
  5,
  30,
  2 * 60,
  10 * 60,
  30 * 60,
  60 * 60,
  3 * 3600,
  6 * 3600,
  12 * 3600,
  24 * 3600,
  24 * 3600,
];
const LONGEST_DELAY_SECONDS = Math.max(...WEBHOOK_RETRY_DELAYS_SECONDS);

/**
 * An endpoint is disabled when its attempts have all failed, at least this many in a row and for
 * at least this long: attempts, not deliveries that used up their retries (that takes ~71 hours
 * per delivery, while every new event would add 12 more attempts), and a duration too, so that
 * a burst of events during a short outage does not disable it.
 */
export const DISABLE_AFTER_FAILED_ATTEMPTS = 20;
export const DISABLE_AFTER_FAILING_HOURS = 24;

/**
 * Test events and redeliveries together, per endpoint and rolling minute: the POSTs a person asks
 * for. Enough to try every event kind once and redeliver a few.
 */
export const MANUAL_SENDS_PER_MINUTE = 20;
/**
 * The same per account, over all its endpoints, deleted ones included: deleting an endpoint and adding it again gains
 * nothing.
 */
export const MANUAL_SENDS_PER_ACCOUNT_PER_MINUTE = 3 * MANUAL_SENDS_PER_MINUTE;

type EndpointFilter = (eb: ExpressionBuilder<Database, 'webhook_endpoints'>) => Expression<SqlBool>;

/**
 * Inside the caller's transaction: one pending delivery per endpoint the filter selects, all
 * with the same event id and payload text, and the first attempt of each enqueued to run at once.
 */
export async function queueEvent(
  tx: Tx,
  boss: PgBoss,
  event: { type: DeliveryEvent; data: Record<string, unknown>; submissionId: string | null },
  endpoints: EndpointFilter,
): Promise<string[]> {
  const eventId = `msg_${randomBytes(16).toString('hex')}`;
  const payload = JSON.stringify({ event: event.type, timestamp: new Date().toISOString(), data: event.data });
  const deliveries = await tx
    .insertInto('webhook_deliveries')
    .columns(['event_id', 'endpoint_id', 'account_id', 'submission_id', 'event_type', 'payload', 'next_attempt_at'])
    .expression(
      tx
        .selectFrom('webhook_endpoints')
        .select((eb) => [
          eb.val(eventId).as('event_id'),
          'id',
          'account_id',
          eb.val(event.submissionId).as('submission_id'),
          eb.val(event.type).as('event_type'),
          sql<string>`${payload}::json`.as('payload'),
          sql<Date>`now()`.as('next_attempt_at'),
        ])
        .where(endpoints)
        // An endpoint being deleted is waited for and then skipped, where the foreign key's own
        // check would fail the transaction that announces the event.
        .forKeyShare(),
    )
    .returning(['id', 'endpoint_id'])
    .$narrowType<{ endpoint_id: string }>()
    .execute();
  for (const { id, endpoint_id } of deliveries)
    await enqueueDelivery(boss, bossAdapter(tx), { deliveryId: id, endpointId: endpoint_id });
  return deliveries.map(({ id }) => id);
}

/**
 * Inside the caller's transaction: the event goes to every enabled endpoint of the account that
 * subscribes to it. Rolled back with the change it announces.
 */
export async function queueAccountEvent(
  tx: Tx,
  boss: PgBoss,
  event: { accountId: string; type: WebhookEvent; data: Record<string, unknown>; submissionId?: string },
): Promise<void> {
  const { accountId, type } = event;
  await queueEvent(tx, boss, { type, data: event.data, submissionId: event.submissionId ?? null }, (eb) =>
    eb.and([
      eb('account_id', '=', accountId),
      eb('enabled', '=', true),
      eb(eb.val<string>(type), '=', eb.fn.any('events')),
    ]),
  );
}

/** Of the receiver's answer, kept with each attempt and shown on the endpoint's page. */
export const RESPONSE_BODY_START_CHARACTERS = 200;
/** Read, and discarded past the start, so the connection can be reused; a longer answer closes it. */
const RESPONSE_BODY_READ_LIMIT_BYTES = 64 * 1024;

interface AttemptResult {
  statusCode: number | null;
  error: string | null;
  responseBodyStart: string | null;
  retryAfterSeconds: number | null;
  durationMs: number;
}

/**
 * One attempt of a pending delivery, run as the deliver-webhook job: POST the stored payload,
 * then record the attempt and what comes next (done, retry at a time, or failed) in one
 * transaction. Throws only when that cannot be recorded, so pg-boss retries the job.
 */
export async function deliverWebhook(
  deps: { db: Db; boss: PgBoss; config: Config },
  deliveryId: string,
): Promise<void> {
  const delivery = await deps.db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .select([
      'd.id',
      'd.event_id',
      'd.status',
      'd.attempt_count',
      'e.id as endpoint_id',
      'e.url',
      'e.secret',
      'e.enabled',
      'e.disabled_reason',
    ])
    // The json column's exact text: pg would parse it, and the signature is over these bytes.
    .select(sql<string>`d.payload::text`.as('payload'))
    .where('d.id', '=', deliveryId)
    .executeTakeFirst();
  if (delivery?.status !== 'pending') return;

  // Disabling ends pending deliveries; this one was queued while the endpoint was being disabled.
  if (!delivery.enabled) {
    await deps.db
      .updateTable('webhook_deliveries')
      .set({ status: 'failed', next_attempt_at: null, last_error: endpointDisabledError(delivery.disabled_reason) })
      .where('id', '=', delivery.id)
      .where('status', '=', 'pending')
      .execute();
    return;
  }

  const attempt = delivery.attempt_count + 1;
  const startedAt = new Date();
  const result = await post(delivery, startedAt, deps.config);
  observeWebhookAttempt(result);
  const next = nextStep(attempt, result);

  await deps.db.transaction().execute(async (tx) => {
    await lockEndpoint(tx, delivery.endpoint_id);
    // Conditional on the attempt count, so a duplicate run of the same attempt records nothing.
    const updated = await tx
      .updateTable('webhook_deliveries')
      .set({
        status: next.status,
        attempt_count: attempt,
        last_status_code: result.statusCode,
        last_error: result.error,
        next_attempt_at: next.retryAt ?? null,
        delivered_at: next.status === 'delivered' ? new Date() : null,
      })
      .where('id', '=', delivery.id)
      .where('status', '=', 'pending')
      .where('attempt_count', '=', delivery.attempt_count)
      .executeTakeFirst();
    if (updated.numUpdatedRows === 0n) return;
    await tx
      .insertInto('webhook_attempts')
      .values({
        delivery_id: delivery.id,
        attempt,
        started_at: startedAt,
        duration_ms: result.durationMs,
        status_code: result.statusCode,
        error: result.error,
        response_body_start: result.responseBodyStart,
      })
      .execute();
    const disabled = await recordOnEndpoint(tx, deps.boss, delivery.endpoint_id, startedAt, result, next.gone === true);
    if (next.retryAt && !disabled) {
      await enqueueDelivery(
        deps.boss,
        bossAdapter(tx),
        { deliveryId: delivery.id, endpointId: delivery.endpoint_id },
        next.retryAt,
      );
    }
  });
}

/**
 * Counts the attempt in the endpoint's run of failures (a 2xx ends the run) and disables the
 * endpoint after 410 Gone or a long enough run, telling the account's other endpoints. Returns
 * whether it disabled the endpoint.
 */
async function recordOnEndpoint(
  tx: Tx,
  boss: PgBoss,
  endpointId: string,
  startedAt: Date,
  result: AttemptResult,
  gone: boolean,
): Promise<boolean> {
  if (result.error === null) {
    await tx
      .updateTable('webhook_endpoints')
      .set({ failing_since: null, consecutive_failures: 0 })
      .where('id', '=', endpointId)
      .where('consecutive_failures', '>', 0)
      .execute();
    return false;
  }
  const run = await tx
    .updateTable('webhook_endpoints')
    .set((eb) => ({
      consecutive_failures: eb('consecutive_failures', '+', 1),
      failing_since: eb.fn.coalesce('failing_since', eb.val(startedAt)),
    }))
    .where('id', '=', endpointId)
    // A second attempt finishing after the endpoint was disabled neither counts nor disables again.
    .where('enabled', '=', true)
    .returning(['account_id', 'url', 'failing_since', 'consecutive_failures'])
    .executeTakeFirst();
  if (!run?.failing_since) return false;
  const failingHours = (startedAt.getTime() - run.failing_since.getTime()) / 3600_000;
  const reason = gone
    ? `The receiver answered 410 Gone on ${startedAt.toISOString()}`
    : run.consecutive_failures >= DISABLE_AFTER_FAILED_ATTEMPTS && failingHours >= DISABLE_AFTER_FAILING_HOURS
      ? `Every attempt since ${run.failing_since.toISOString()} failed (${run.consecutive_failures} attempts, over ${DISABLE_AFTER_FAILING_HOURS} hours); the last: ${result.error}`
      : null;
  if (reason === null) return false;
  await disableEndpoint(tx, endpointId, reason);
  await queueAccountEvent(tx, boss, {
    accountId: run.account_id,
    type: 'webhook_endpoint.disabled',
    data: {
      endpoint_id: Number(endpointId),
      url: run.url,
      reason,
      failing_since: run.failing_since.toISOString(),
      failed_attempts: run.consecutive_failures,
    },
  });
  return true;
}

async function post(
  delivery: { event_id: string; url: string; secret: string; payload: string },
  startedAt: Date,
  config: Config,
): Promise<AttemptResult> {
  const started = performance.now();
  const timing = () => ({ durationMs: Math.round(performance.now() - started) });
  const headers = webhookHeaders(
    delivery.secret,
    delivery.event_id,
    Math.floor(startedAt.getTime() / 1000),
    delivery.payload,
  );
  const signal = AbortSignal.timeout(config.webhookTimeoutMs);
  try {
    const response = await request(delivery.url, {
      method: 'POST',
      headers,
      body: delivery.payload,
      signal,
      dispatcher: config.webhookAllowPrivate ? undefined : publicOnlyAgent,
    });
    const responseBodyStart = await readBodyStart(response.body);
    const ok = response.statusCode >= 200 && response.statusCode < 300;
    return {
      statusCode: response.statusCode,
      error: ok
        ? null
        : `The receiver answered HTTP ${response.statusCode} ${STATUS_CODES[response.statusCode] ?? ''}`.trim(),
      responseBodyStart,
      retryAfterSeconds: parseRetryAfter(response.headers['retry-after']),
      ...timing(),
    };
  } catch (error) {
    const message = signal.aborted ? `No answer within ${config.webhookTimeoutMs} ms` : (error as Error).message;
    return { statusCode: null, error: message, responseBodyStart: null, retryAfterSeconds: null, ...timing() };
  }
}

/**
 * The first RESPONSE_BODY_START_CHARACTERS characters of the answer, read as UTF-8 (anything else
 * shows as replacement characters; NUL too, which a text column cannot hold).
 */
async function readBodyStart(body: AsyncIterable<Buffer>): Promise<string> {
  const start: Buffer[] = [];
  let kept = 0;
  let read = 0;
  for await (const chunk of body) {
    read += chunk.length;
    // Four bytes at most per character.
    if (kept < RESPONSE_BODY_START_CHARACTERS * 4) {
      start.push(chunk);
      kept += chunk.length;
    }
    if (read > RESPONSE_BODY_READ_LIMIT_BYTES) break;
  }
  const text = new TextDecoder('utf-8').decode(Buffer.concat(start));
  return Array.from(text).slice(0, RESPONSE_BODY_START_CHARACTERS).join('').replaceAll('\0', '\uFFFD');
}

function nextStep(attempt: number, result: AttemptResult): { status: DeliveryStatus; retryAt?: Date; gone?: boolean } {
  if (result.error === null) return { status: 'delivered' };
  if (result.statusCode === 410) return { status: 'failed', gone: true };
  const step = WEBHOOK_RETRY_DELAYS_SECONDS[attempt - 1];
  if (step === undefined) return { status: 'failed' };
  const delaySeconds = Math.max(step, Math.min(result.retryAfterSeconds ?? 0, LONGEST_DELAY_SECONDS));
  return { status: 'pending', retryAt: new Date(Date.now() + delaySeconds * 1000) };
}

/** Retry-After is either delay-seconds or an HTTP-date. */
function parseRetryAfter(header: string | string[] | undefined): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, (date - Date.now()) / 1000);
}

/**
 * The dashboard's "redeliver": a delivered or failed delivery becomes pending and is attempted at
 * once with the same webhook-id. It continues its retry schedule where it stopped, so a delivery
 * that used up its retries gets this one attempt.
 */
export async function redeliver(db: Db, boss: PgBoss, accountId: string, deliveryId: string): Promise<void> {
  const notFound = () => new DomainError('not_found', 'delivery id', 'Webhook delivery not found');
  const id = requireId(deliveryId, 'delivery id', notFound);
  await db.transaction().execute(async (tx) => {
    // The endpoint's row first, as every transaction that changes the endpoint's deliveries does;
    // the delivery is read after it, once a deletion or attempt that held it is done.
    await tx
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('id', '=', (eb) => eb.selectFrom('webhook_deliveries').select('endpoint_id').where('id', '=', id))
      .forNoKeyUpdate()
      .execute();
    const delivery = await tx
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .select(['d.id', 'd.status', 'e.id as endpoint_id', 'e.enabled'])
      .where('d.id', '=', id)
      .where('e.account_id', '=', accountId)
      .forUpdate('d')
      .executeTakeFirst();
    if (!delivery) throw notFound();
    if (delivery.status === 'pending')
      throw new DomainError('invalid', 'delivery id', 'This delivery is already scheduled');
    assertEnabled(delivery.enabled);
    await countManualSend(tx, accountId, delivery.endpoint_id);
    await tx
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', next_attempt_at: new Date(), delivered_at: null })
      .where('id', '=', delivery.id)
      .execute();
    await enqueueDelivery(boss, bossAdapter(tx), { deliveryId: delivery.id, endpointId: delivery.endpoint_id });
  });
}

/**
 * Sends a test event to one endpoint, so its owner can check the receiver: `webhook.test`, or an
 * example of any event kind with `"test": true` in its data.
 */
export async function sendTestEvent(
  db: Db,
  boss: PgBoss,
  accountId: string,
  endpointId: string,
  kind: string = 'webhook.test',
): Promise<{ deliveryId: string }> {
  const type = TEST_EVENT_KINDS.find((known) => known === kind);
  if (!type) throw new DomainError('invalid', 'kind', `Unknown event kind: ${kind}`);
  return db.transaction().execute(async (tx) => {
    const endpoint = await tx
      .selectFrom('webhook_endpoints')
      .select(['id', 'enabled'])
      .where('id', '=', requireEndpointId(endpointId))
      .where('account_id', '=', accountId)
      // Locked before countManualSend's insert refers to it, so a deletion comes before or after.
      .forNoKeyUpdate()
      .executeTakeFirst();
    if (!endpoint) throw endpointNotFound();
    assertEnabled(endpoint.enabled);
    await countManualSend(tx, accountId, endpoint.id);
    const [deliveryId] = await queueEvent(
      tx,
      boss,
      { type, data: { ...EXAMPLE_EVENT_DATA[type], endpoint_id: Number(endpoint.id), test: true }, submissionId: null },
      (eb) => eb('id', '=', endpoint.id),
    );
    // One id for the one endpoint, locked above; the check is for the type.
    if (!deliveryId) throw endpointNotFound();
    return { deliveryId };
  });
}

/**
 * Counts a test event or redelivery against the endpoint's MANUAL_SENDS_PER_MINUTE and the account's
 * MANUAL_SENDS_PER_ACCOUNT_PER_MINUTE, or refuses it with 429 and the seconds until the oldest send
 * in the full window leaves it. The endpoint's row lock makes concurrent sends to it count one after
 * another; the account's bound is a coarser stop, not held that exactly across its endpoints.
 */
async function countManualSend(tx: Tx, accountId: string, endpointId: string): Promise<void> {
  await lockEndpoint(tx, endpointId);
  await tx
    .deleteFrom('webhook_manual_sends')
    .where('account_id', '=', accountId)
    .where('sent_at', '<=', sql<Date>`now() - interval '1 minute'`)
    .execute();
  const endpoint = await manualSendWindow(tx, 'endpoint_id', endpointId);
  if (endpoint.count >= MANUAL_SENDS_PER_MINUTE)
    throw tooManyManualSends(
      `${MANUAL_SENDS_PER_MINUTE} test events and redeliveries a minute go to one endpoint`,
      endpoint,
    );
  const account = await manualSendWindow(tx, 'account_id', accountId);
  if (account.count >= MANUAL_SENDS_PER_ACCOUNT_PER_MINUTE) {
    throw tooManyManualSends(
      `${MANUAL_SENDS_PER_ACCOUNT_PER_MINUTE} test events and redeliveries a minute go to the endpoints of one account`,
      account,
    );
  }
  await tx.insertInto('webhook_manual_sends').values({ account_id: accountId, endpoint_id: endpointId }).execute();
}

/** The sends of the last minute to one endpoint or one account, and the seconds until the oldest leaves the window. */
async function manualSendWindow(
  tx: Tx,
  column: 'endpoint_id' | 'account_id',
  id: string,
): Promise<{ count: number; retryAfterSeconds: number }> {
  const window = await tx
    .selectFrom('webhook_manual_sends')
    .select((eb) => [
      eb.fn.countAll<string>().as('count'),
      sql<number>`ceil(extract(epoch FROM min(sent_at) + interval '1 minute' - now()))::int`.as('retryAfterSeconds'),
    ])
    .where(column, '=', id)
    .where('sent_at', '>', sql<Date>`now() - interval '1 minute'`)
    .executeTakeFirstOrThrow();
  return { count: Number(window.count), retryAfterSeconds: window.retryAfterSeconds };
}

function tooManyManualSends(bound: string, window: { retryAfterSeconds: number }): DomainError {
  const seconds = Math.max(1, window.retryAfterSeconds);
  return new DomainError('refused', 'endpoint id', `At most ${bound}. Try again in ${seconds} seconds.`, {
    status: 429,
    headers: { 'retry-after': String(seconds) },
  });
}

function assertEnabled(enabled: boolean): void {
  if (!enabled) throw new DomainError('invalid', 'endpoint id', 'The endpoint is disabled: enable it first');
}
