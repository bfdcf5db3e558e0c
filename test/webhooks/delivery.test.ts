import { sql } from 'kysely';
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../src/config.ts';
import { createDatabase } from '../../src/db/database.ts';
import { notify, type SubmissionOutcome } from '../../src/pipeline/notify.ts';
import { createBoss } from '../../src/queue.ts';
import type { ChainReading } from '../../src/readers/chain.ts';
import {
  deliverWebhook,
  redeliver,
  RESPONSE_BODY_START_CHARACTERS,
  sendTestEvent,
  WEBHOOK_RETRY_DELAYS_SECONDS,
} from '../../src/webhooks/deliver.ts';
import { deleteWebhookEndpoint, updateWebhookEndpoint } from '../../src/webhooks/endpoints.ts';
import type { WebhookEvent } from '../../src/webhooks/events.ts';
import { newWebhookSecret } from '../../src/webhooks/signature.ts';
import { startWebhookReceiver, status } from '../fakes/webhook-receiver.ts';
import { createTestDatabase } from '../helpers/database.ts';

const database = await createTestDatabase();
t.teardown(database.drop);
const db = createDatabase(database.url);
t.teardown(() => db.destroy());
const config = loadConfig({ WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_TIMEOUT_MS: '300' });
const boss = createBoss(database.url, config);
await boss.start();
t.teardown(() => boss.stop({ graceful: false }));
const deps = { db, boss, config };

const receiver = await startWebhookReceiver();
t.teardown(receiver.close);
const receiverUrl = (path: string) => `${receiver.url}${path}`;
const { answer, requestsTo } = receiver;

const accountId = (
  await db.insertInto('accounts').values({ name: 'Waterworks' }).returning('id').executeTakeFirstOrThrow()
).id;
const apiKeyId = (
  await db
    .insertInto('api_keys')
    .values({
      account_id: accountId,
      project_name: 'Test',
      key_sha256: 'a'.repeat(64),
      display_prefix: 'ml_',
      display_suffix: 'aaaa',
    })
    .returning('id')
    .executeTakeFirstOrThrow()
).id;

async function addEndpoint(
  path: string,
  options: { events?: WebhookEvent[]; enabled?: boolean; url?: string; account?: string } = {},
) {
  const secret = newWebhookSecret();
  const { id } = await db
    .insertInto('webhook_endpoints')
    .values({
      account_id: options.account ?? accountId,
      url: options.url ?? receiverUrl(path),
      secret,
      events: options.events,
      enabled: options.enabled ?? true,
      disabled_reason: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { id, secret };
}

async function newMeter() {
  return db
    .insertInto('submissions')
    .values({
      account_id: accountId,
      api_key_id: apiKeyId,
      mode: 'async',
      error_code: null,
      error_message: null,
      started_at: null,
      finished_at: null,
    })
    .returning(['id', 'reference_id'])
    .executeTakeFirstOrThrow();
}

async function completedOutcome(account = accountId): Promise<SubmissionOutcome> {
  const meter = await newMeter();
  const reading = {
    reading: '004217.35',
    value: 4217.35,
    confidence: 93,
    model: 'local-crnn-v1',
    escalated: false,
    plausibility: 'unknown',
  } as ChainReading;
  return {
    status: 'completed',
    submissionId: meter.id,
    accountId: account,
    referenceId: meter.reference_id,
    reading,
    stored: {
      ...reading,
      value: '4217.35',
      readingId: '42',
      digitConfidences: null,
      counterBox: null,
      wholeUnitsAgreed: false,
    },
    context: { meterId: null, reviewBelow: 90 },
  };
}

/** Notifies in a committed transaction; returns the deliveries it created. */
async function notifyCommitted(outcome: SubmissionOutcome) {
  await db.transaction().execute((tx) => notify(tx, boss, outcome));
  return deliveriesOf(outcome.submissionId);
}

function deliveriesOf(meterId: string) {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .select((eb) => eb.cast<string>('payload', 'text').as('payload_text'))
    .where('submission_id', '=', meterId)
    .orderBy('endpoint_id')
    .execute();
}

function delivery(id: string) {
  return db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

function attempts(deliveryId: string) {
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', '=', deliveryId)
    .orderBy('attempt')
    .execute();
}

/** The deliver-webhook jobs pg-boss holds for a delivery. */
async function jobs(deliveryId: string) {
  const { rows } = await sql<{ start_after: Date }>`
    SELECT start_after FROM pgboss.job WHERE name = 'deliver-webhook' AND data->>'deliveryId' = ${deliveryId} ORDER BY start_after
  `.execute(db);
  return rows;
}

/** Seconds between an attempt's start and the next attempt it scheduled. */
async function scheduledDelaySeconds(deliveryId: string): Promise<number> {
  const { next_attempt_at, attempt_count } = await delivery(deliveryId);
  const [last] = (await attempts(deliveryId)).filter((row) => row.attempt === attempt_count);
  return (next_attempt_at!.getTime() - last.started_at.getTime()) / 1000;
}

// Each test adds the endpoints it needs; those of earlier tests must not receive its events.
t.beforeEach(() => db.updateTable('webhook_endpoints').set({ enabled: false }).execute());

t.test('notify creates one delivery per enabled endpoint subscribed to the event, and enqueues it', async (t) => {
  const outcome = await completedOutcome();
  const all = await addEndpoint('/notify/all');
  const completedOnly = await addEndpoint('/notify/completed', { events: ['reading.completed'] });
  await addEndpoint('/notify/failed-only', { events: ['reading.failed'] });
  await addEndpoint('/notify/disabled', { enabled: false });
  const otherAccount = (
    await db.insertInto('accounts').values({ name: 'Other' }).returning('id').executeTakeFirstOrThrow()
  ).id;
  await addEndpoint('/notify/other-account', { account: otherAccount });

  const deliveries = await notifyCommitted(outcome);
  t.same(
    deliveries.map((row) => row.endpoint_id),
    [all.id, completedOnly.id],
  );
  t.equal(new Set(deliveries.map((row) => row.event_id)).size, 1, 'one event id for the event, whatever the endpoint');
  t.match(deliveries[0].event_id, /^msg_/);
  t.equal(deliveries[0].payload_text, deliveries[1].payload_text);
  t.match(deliveries[0], { status: 'pending', event_type: 'reading.completed', attempt_count: 0 });
  const payload = JSON.parse(deliveries[0].payload_text);
  t.same(payload.data, {
    reference_id: outcome.referenceId,
    reading: '004217.35',
    value: 4217.35,
    confidence: 93,
    escalated: false,
    model: 'local-crnn-v1',
    reading_id: 42,
    meter_id: null,
    needs_review: false,
    whole_units_agreed: false,
    plausibility: {
      status: 'unknown',
      reference: null,
      reference_source: null,
      reference_submission: null,
      window: null,
    },
  });
  t.equal(payload.event, 'reading.completed');
  t.equal(new Date(payload.timestamp).toISOString(), payload.timestamp, 'ISO-8601 timestamp');
  for (const row of deliveries) t.equal((await jobs(row.id)).length, 1, 'a job to attempt it at once');
});

t.test('a failed reading is announced with its error; a rolled-back transaction announces nothing', async (t) => {
  await addEndpoint('/notify/failures', { events: ['reading.failed'] });
  const meter = await newMeter();
  const failed: SubmissionOutcome = {
    status: 'failed',
    submissionId: meter.id,
    accountId,
    referenceId: meter.reference_id,
    error: { code: 'unreadable', message: 'No digits' },
  };
  await t.rejects(
    db.transaction().execute(async (tx) => {
      await notify(tx, boss, failed);
      throw new Error('recording the outcome failed');
    }),
    /recording the outcome failed/,
  );
  t.same(await deliveriesOf(meter.id), [], 'no delivery rows');
  const { rows } = await sql<{
    count: string;
  }>`SELECT count(*) FROM pgboss.job WHERE name = 'deliver-webhook' AND data->>'deliveryId' NOT IN (SELECT id::text FROM webhook_deliveries)`.execute(
    db,
  );
  t.equal(rows[0].count, '0', 'no jobs for deliveries that do not exist');

  const [row] = await notifyCommitted(failed);
  t.same(JSON.parse(row.payload_text).data, {
    reference_id: meter.reference_id,
    error: { code: 'unreadable', message: 'No digits' },
    needs_review: true,
  });
  t.equal(row.event_type, 'reading.failed');
});

t.test('a delivery is signed so that the standardwebhooks package verifies it, and a 2xx delivers it', async (t) => {
  const endpoint = await addEndpoint('/deliver/ok');
  const [row] = await notifyCommitted(await completedOutcome());
  await deliverWebhook(deps, row.id);

  const [request] = requestsTo('/deliver/ok');
  t.equal(request.body, row.payload_text, 'the stored payload bytes are sent');
  t.equal(request.headers['content-type'], 'application/json');
  t.equal(request.headers['webhook-id'], row.event_id);
  t.same(
    new Webhook(endpoint.secret).verify(request.body, request.headers as Record<string, string>),
    JSON.parse(row.payload_text),
  );
  t.match(await delivery(row.id), {
    status: 'delivered',
    attempt_count: 1,
    last_status_code: 204,
    last_error: null,
    next_attempt_at: null,
  });
  t.ok((await delivery(row.id)).delivered_at);
  t.match(await attempts(row.id), [{ attempt: 1, status_code: 204, error: null }]);

  await deliverWebhook(deps, row.id);
  t.equal(requestsTo('/deliver/ok').length, 1, 'a delivered delivery is not sent again');
});

t.test('a 500 is recorded and retried on the schedule with the same webhook-id', async (t) => {
  const endpoint = await addEndpoint('/deliver/500');
  answer('/deliver/500', status(500));
  const [row] = await notifyCommitted(await completedOutcome());

  await deliverWebhook(deps, row.id);
  t.match(await delivery(row.id), {
    status: 'pending',
    attempt_count: 1,
    last_status_code: 500,
    last_error: 'The receiver answered HTTP 500 Internal Server Error',
  });
  t.match(await attempts(row.id), [{ attempt: 1, status_code: 500, error: /HTTP 500/ }]);
  const delay = await scheduledDelaySeconds(row.id);
  t.ok(
    delay >= WEBHOOK_RETRY_DELAYS_SECONDS[0] && delay < WEBHOOK_RETRY_DELAYS_SECONDS[0] + 5,
    `next attempt ${delay} s after the first`,
  );
  const scheduled = await jobs(row.id);
  t.equal(scheduled.length, 2, 'the first job and the retry');
  t.equal(
    scheduled[1].start_after.getTime(),
    (await delivery(row.id)).next_attempt_at!.getTime(),
    'pg-boss starts the retry then',
  );

  await deliverWebhook(deps, row.id);
  const [first, second] = requestsTo('/deliver/500');
  t.equal(second.headers['webhook-id'], first.headers['webhook-id'], 'webhook-id is stable across retries');
  t.equal(second.body, first.body);
  t.same(
    new Webhook(endpoint.secret).verify(second.body, second.headers as Record<string, string>),
    JSON.parse(row.payload_text),
  );
  t.match(await delivery(row.id), { status: 'delivered', attempt_count: 2, last_status_code: 204, last_error: null });
  t.same(
    (await attempts(row.id)).map((attempt) => attempt.status_code),
    [500, 204],
  );
});

t.test('a Retry-After longer than the step is honoured, as seconds or as an HTTP-date', async (t) => {
  await addEndpoint('/deliver/retry-after');
  const inAnHour = new Date(Date.now() + 3600_000).toUTCString();
  answer(
    '/deliver/retry-after',
    status(429, { 'retry-after': '120' }),
    status(503, { 'retry-after': inAnHour }),
    status(503, { 'retry-after': '1' }),
  );
  const [row] = await notifyCommitted(await completedOutcome());

  await deliverWebhook(deps, row.id);
  const afterSeconds = await scheduledDelaySeconds(row.id);
  t.ok(afterSeconds >= 120 && afterSeconds < 125, `Retry-After: 120 → ${afterSeconds} s`);
  await deliverWebhook(deps, row.id);
  const afterDate = await scheduledDelaySeconds(row.id);
  t.ok(afterDate >= 3590 && afterDate < 3605, `Retry-After: <date in an hour> → ${afterDate} s`);
  await deliverWebhook(deps, row.id);
  const shorter = await scheduledDelaySeconds(row.id);
  t.ok(
    shorter >= WEBHOOK_RETRY_DELAYS_SECONDS[2] && shorter < WEBHOOK_RETRY_DELAYS_SECONDS[2] + 5,
    `a shorter Retry-After keeps the step: ${shorter} s`,
  );
});

t.test('410 Gone disables the endpoint; its other pending deliveries then fail without a request', async (t) => {
  await addEndpoint('/deliver/gone');
  answer('/deliver/gone', status(410));
  const [first] = await notifyCommitted(await completedOutcome());
  const [second] = await notifyCommitted(await completedOutcome());

  await deliverWebhook(deps, first.id);
  t.match(await delivery(first.id), { status: 'failed', last_status_code: 410, next_attempt_at: null });
  const endpoint = await db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', '=', first.endpoint_id)
    .executeTakeFirstOrThrow();
  t.match(endpoint, { enabled: false, disabled_reason: /410 Gone/ });
  t.equal((await jobs(first.id)).length, 1, 'no retry');

  await deliverWebhook(deps, second.id);
  t.match(await delivery(second.id), {
    status: 'failed',
    attempt_count: 0,
    last_error: /^Endpoint disabled: .*410 Gone/,
  });
  t.equal(requestsTo('/deliver/gone').length, 1);
});

t.test('the retry schedule spans about 3 days, then the delivery fails', async (t) => {
  const totalHours = WEBHOOK_RETRY_DELAYS_SECONDS.reduce((sum, seconds) => sum + seconds, 0) / 3600;
  t.ok(totalHours > 66 && totalHours <= 72, `${totalHours.toFixed(1)} hours from first to last attempt`);

  await addEndpoint('/deliver/always-500');
  answer('/deliver/always-500', ...Array.from({ length: 20 }, () => status(500)));
  const [row] = await notifyCommitted(await completedOutcome());
  for (const step of WEBHOOK_RETRY_DELAYS_SECONDS) {
    await deliverWebhook(deps, row.id);
    const delay = await scheduledDelaySeconds(row.id);
    t.ok(delay >= step && delay < step + 5, `retry after ${step} s`);
  }
  await deliverWebhook(deps, row.id);
  const attemptCount = WEBHOOK_RETRY_DELAYS_SECONDS.length + 1;
  t.match(await delivery(row.id), {
    status: 'failed',
    attempt_count: attemptCount,
    last_status_code: 500,
    next_attempt_at: null,
  });
  t.equal((await attempts(row.id)).length, attemptCount);
  t.equal((await jobs(row.id)).length, attemptCount, 'no job after the last attempt');
  await deliverWebhook(deps, row.id);
  t.equal(requestsTo('/deliver/always-500').length, attemptCount, 'a failed delivery is not attempted again');
});

t.test('a receiver that does not answer in time is recorded as a timeout', async (t) => {
  await addEndpoint('/deliver/slow');
  answer('/deliver/slow', () => {});
  const [row] = await notifyCommitted(await completedOutcome());
  await deliverWebhook(deps, row.id);
  t.match(await delivery(row.id), {
    status: 'pending',
    attempt_count: 1,
    last_status_code: null,
    last_error: 'No answer within 300 ms',
  });
  t.match(await attempts(row.id), [{ attempt: 1, status_code: null, error: 'No answer within 300 ms' }]);
});

t.test('without WEBHOOK_ALLOW_PRIVATE, a delivery to a private address is refused and recorded', async (t) => {
  const strict = { ...deps, config: loadConfig({ WEBHOOK_TIMEOUT_MS: '300' }) };
  const { port } = new URL(receiver.url);
  for (const url of [`http://127.0.0.1:${port}/deliver/private`, `http://localhost:${port}/deliver/private`]) {
    const endpoint = await addEndpoint('/deliver/private', { url });
    const outcome = await completedOutcome();
    await notifyCommitted(outcome);
    const [row] = (await deliveriesOf(outcome.submissionId)).filter(
      (candidate) => candidate.endpoint_id === endpoint.id,
    );
    await deliverWebhook(strict, row.id);
    t.match(
      await delivery(row.id),
      {
        status: 'pending',
        attempt_count: 1,
        last_status_code: null,
        last_error: /^Refused to connect to .*non-public address/,
      },
      url,
    );
    t.match(await attempts(row.id), [{ attempt: 1, error: /Refused/ }]);
  }
  t.equal(requestsTo('/deliver/private').length, 0, 'no request reached the receiver');
});

t.test(
  'redeliver resends a delivered or failed delivery with the same webhook-id, for its own account only',
  async (t) => {
    await addEndpoint('/redeliver');
    const [row] = await notifyCommitted(await completedOutcome());
    await deliverWebhook(deps, row.id);
    const otherAccount = (
      await db.insertInto('accounts').values({ name: 'Someone else' }).returning('id').executeTakeFirstOrThrow()
    ).id;

    await t.rejects(redeliver(db, boss, otherAccount, row.id), { name: 'DomainError', kind: 'not_found' });
    await t.rejects(redeliver(db, boss, accountId, 'nope'), { name: 'DomainError', kind: 'not_found' });
    await redeliver(db, boss, accountId, row.id);
    t.match(await delivery(row.id), { status: 'pending', delivered_at: null });
    t.equal((await jobs(row.id)).length, 2);
    await t.rejects(redeliver(db, boss, accountId, row.id), {
      name: 'DomainError',
      kind: 'invalid',
      message: /already scheduled/,
    });

    await deliverWebhook(deps, row.id);
    const [first, second] = requestsTo('/redeliver');
    t.equal(second.headers['webhook-id'], first.headers['webhook-id']);
    t.match(await delivery(row.id), { status: 'delivered', attempt_count: 2 });
  },
);

t.test('sendTestEvent sends a webhook.test event to one enabled endpoint of the account', async (t) => {
  const endpoint = await addEndpoint('/test-event', { events: ['reading.failed'] });
  const otherAccount = (
    await db.insertInto('accounts').values({ name: 'Stranger' }).returning('id').executeTakeFirstOrThrow()
  ).id;
  await t.rejects(sendTestEvent(db, boss, otherAccount, endpoint.id), { name: 'DomainError', kind: 'not_found' });

  const { deliveryId } = await sendTestEvent(db, boss, accountId, endpoint.id);
  t.match(await delivery(deliveryId), { event_type: 'webhook.test', meter_id: null, status: 'pending' });
  await deliverWebhook(deps, deliveryId);
  const [request] = requestsTo('/test-event');
  const payload = new Webhook(endpoint.secret).verify(request.body, request.headers as Record<string, string>);
  t.match(payload, { event: 'webhook.test', data: { endpoint_id: Number(endpoint.id) } });

  const usage = await sendTestEvent(db, boss, accountId, endpoint.id, 'usage.limit_reached');
  t.match(await delivery(usage.deliveryId), {
    event_type: 'usage.limit_reached',
    payload: {
      event: 'usage.limit_reached',
      data: { test: true, month: /^\d{4}-\d{2}$/, count: Number, limit: Number, plan: String },
    },
  });
  await t.rejects(sendTestEvent(db, boss, accountId, endpoint.id, 'nonsense'), {
    name: 'DomainError',
    kind: 'invalid',
    message: /Unknown event kind/,
  });

  await db.updateTable('webhook_endpoints').set({ enabled: false }).where('id', '=', endpoint.id).execute();
  await t.rejects(sendTestEvent(db, boss, accountId, endpoint.id), {
    name: 'DomainError',
    kind: 'invalid',
    message: /disabled/,
  });
});

t.test("each attempt keeps the start of the receiver's answer; none when no answer came", async (t) => {
  await addEndpoint('/deliver/body');
  const page = `<html><h1>502 Bad Gateway</h1>\u0000${'é'.repeat(300)}</html>`;
  answer(
    '/deliver/body',
    (response) => response.writeHead(502, { 'content-type': 'text/html' }).end(page),
    () => {},
  );
  const [row] = await notifyCommitted(await completedOutcome());
  await deliverWebhook(deps, row.id);
  await deliverWebhook(deps, row.id);
  await deliverWebhook(deps, row.id);
  const [bad, silent, ok] = await attempts(row.id);
  t.equal(bad.status_code, 502);
  t.equal(
    bad.response_body_start,
    Array.from(page.replace('\u0000', '\uFFFD')).slice(0, RESPONSE_BODY_START_CHARACTERS).join(''),
  );
  t.equal(Array.from(bad.response_body_start!).length, RESPONSE_BODY_START_CHARACTERS, 'characters, not bytes');
  t.match(silent, { status_code: null, error: 'No answer within 300 ms', response_body_start: null });
  t.match(ok, { status_code: 204, response_body_start: '' });
});

t.test("an edited URL takes the endpoint's pending deliveries at their next attempt", async (t) => {
  const endpoint = await addEndpoint('/edit/old');
  answer('/edit/old', status(503));
  const [row] = await notifyCommitted(await completedOutcome());
  await deliverWebhook(deps, row.id);
  t.match(await delivery(row.id), { status: 'pending', attempt_count: 1 });

  await updateWebhookEndpoint(db, config, {
    accountId,
    id: endpoint.id,
    url: receiverUrl('/edit/new'),
    events: ['reading.completed'],
  });
  await deliverWebhook(deps, row.id);
  t.equal(requestsTo('/edit/old').length, 1);
  t.equal(requestsTo('/edit/new').length, 1, 'the retry went to the new URL');
  t.equal(requestsTo('/edit/new')[0].headers['webhook-id'], row.event_id);
  t.match(await delivery(row.id), { status: 'delivered', attempt_count: 2 });
});

t.test(
  'deleting an endpoint ends its pending deliveries visibly and keeps its history; a queued attempt sends nothing',
  async (t) => {
    const endpoint = await addEndpoint('/delete/me');
    answer('/delete/me', status(503), status(204), status(503));
    const [done] = await notifyCommitted(await completedOutcome());
    await deliverWebhook(deps, done.id);
    await deliverWebhook(deps, done.id);
    const [pending] = await notifyCommitted(await completedOutcome());
    await deliverWebhook(deps, pending.id);
    t.match(await delivery(pending.id), { status: 'pending', attempt_count: 1 });

    const otherAccount = (
      await db.insertInto('accounts').values({ name: 'Not the owner' }).returning('id').executeTakeFirstOrThrow()
    ).id;
    await t.rejects(deleteWebhookEndpoint(db, otherAccount, endpoint.id), { name: 'DomainError', kind: 'not_found' });
    t.same(await deleteWebhookEndpoint(db, accountId, endpoint.id), {
      url: receiverUrl('/delete/me'),
      endedDeliveries: 1,
    });

    t.notOk(
      await db.selectFrom('webhook_endpoints').select('id').where('id', '=', endpoint.id).executeTakeFirst(),
      'the endpoint is gone',
    );
    t.match(await delivery(pending.id), {
      status: 'failed',
      next_attempt_at: null,
      endpoint_id: null,
      account_id: accountId,
      deleted_endpoint_url: receiverUrl('/delete/me'),
      last_error: 'Endpoint deleted by the account before this delivery succeeded',
    });
    t.match(
      await delivery(done.id),
      { status: 'delivered', endpoint_id: null, deleted_endpoint_url: receiverUrl('/delete/me') },
      'past deliveries stay',
    );
    t.equal((await attempts(done.id)).length, 2, 'with their attempts');

    await deliverWebhook(deps, pending.id);
    t.equal(requestsTo('/delete/me').length, 3, 'the retry pg-boss still holds sends nothing');
    await t.rejects(
      redeliver(db, boss, accountId, done.id),
      { name: 'DomainError', kind: 'not_found' },
      'nothing to redeliver to',
    );
  },
);

/** Resolves once this many sessions wait for a lock. */
async function lockWaiters(count: number): Promise<void> {
  const waiting = async () =>
    Number(
      (await sql<{ count: string }>`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'`.execute(db))
        .rows[0].count,
    );
  while ((await waiting()) < count) await new Promise((resolve) => setTimeout(resolve, 20));
}

/**
 * Deletes the endpoint while another transaction holds one of its deliveries, so that the deletion
 * waits there with the endpoint's row locked; `meanwhile` runs then, and waits for the deletion.
 */
async function deleteHeldUp<T>(
  endpointId: string,
  heldDeliveryId: string,
  meanwhile: () => Promise<T>,
): Promise<PromiseSettledResult<T>> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held!: () => void;
  const holding = new Promise<void>((resolve) => (held = resolve));
  const holder = db.transaction().execute(async (tx) => {
    await tx.selectFrom('webhook_deliveries').select('id').where('id', '=', heldDeliveryId).forUpdate().execute();
    held();
    await released;
  });
  await holding;
  const deleting = deleteWebhookEndpoint(db, accountId, endpointId);
  await lockWaiters(1);
  const [result] = await Promise.allSettled([meanwhile(), lockWaiters(2).then(release)]);
  await holder;
  await deleting;
  return result;
}

t.test('an event queued while its endpoint is being deleted skips the endpoint; its transaction commits', async (t) => {
  const endpoint = await addEndpoint('/delete/racing');
  const [earlier] = await notifyCommitted(await completedOutcome());
  const outcome = await completedOutcome();
  const announced = await deleteHeldUp(endpoint.id, earlier.id, () => notifyCommitted(outcome));
  t.same(
    announced,
    { status: 'fulfilled', value: [] },
    'no delivery for the deleted endpoint, and no foreign-key error',
  );
  t.match(await delivery(earlier.id), { status: 'failed', endpoint_id: null });
});

t.test('a redelivery asked for while its endpoint is being deleted is not found, without a deadlock', async (t) => {
  const endpoint = await addEndpoint('/delete/redeliver');
  const [pending] = await notifyCommitted(await completedOutcome());
  const [delivered] = await notifyCommitted(await completedOutcome());
  await deliverWebhook(deps, delivered.id);
  const redelivered = await deleteHeldUp(endpoint.id, pending.id, () => redeliver(db, boss, accountId, delivered.id));
  t.match(redelivered, { status: 'rejected', reason: { name: 'DomainError', kind: 'not_found' } });
  t.match(await delivery(delivered.id), { status: 'delivered', endpoint_id: null });
});
