/**
 * One account must not turn the service into a POST amplifier: a cap on endpoints, a rate limit on
 * the POSTs a person asks for, and endpoints that keep failing are disabled (and the account told).
 * Through the dashboard over HTTP, to real receivers on loopback.
 */
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { createAccount } from '../../src/accounts/accounts.ts';
import { createUser } from '../../src/accounts/users.ts';
import {
  DISABLE_AFTER_FAILED_ATTEMPTS,
  DISABLE_AFTER_FAILING_HOURS,
  deliverWebhook,
  MANUAL_SENDS_PER_ACCOUNT_PER_MINUTE,
  MANUAL_SENDS_PER_MINUTE,
  queueEvent,
} from '../../src/webhooks/deliver.ts';
import { deleteWebhookEndpoint } from '../../src/webhooks/endpoints.ts';
import type { WebhookEvent } from '../../src/webhooks/events.ts';
import { newWebhookSecret } from '../../src/webhooks/signature.ts';
import { startWebhookReceiver, status } from '../fakes/webhook-receiver.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import { startTestService } from '../helpers/service.ts';

const PASSWORD = 'correct horse battery';
const ENDPOINT_CAP = 3;

// No worker: each attempt is made here, when the test says, by the worker's own function.
const service = await startTestService(t, {
  worker: false,
  env: { WEBHOOK_ENDPOINTS_PER_ACCOUNT: String(ENDPOINT_CAP) },
});
const { db, boss, config } = service;
const attempt = (deliveryId: string) => deliverWebhook({ db, boss, config }, deliveryId);
const receiver = await startWebhookReceiver();
t.teardown(receiver.close);

let accounts = 0;
/** A new account and its signed-in dashboard user. */
async function signedIn() {
  const account = await createAccount(db, { name: `Amplifier ${++accounts}` });
  const email = `amplifier${accounts}.${process.pid}@example.com`;
  await createUser(db, { accountId: account.id, email, password: PASSWORD });
  const client = new DashboardClient(service.url);
  const response = await client.signIn(email, PASSWORD);
  if (response.status !== 303) throw new Error(`sign-in answered ${response.status}`);
  await client.get('/dashboard/webhooks');
  return { client, accountId: account.id };
}

async function addEndpoint(accountId: string, path: string, events: WebhookEvent[] = ['reading.completed']) {
  const { id } = await db
    .insertInto('webhook_endpoints')
    .values({
      account_id: accountId,
      url: `${receiver.url}${path}`,
      secret: newWebhookSecret(),
      events,
      disabled_reason: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return id;
}

const endpoint = (id: string) =>
  db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const deliveriesTo = (id: string) =>
  db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', id).orderBy('id').execute();
const deliveryStatus = async (id: string) =>
  (await db.selectFrom('webhook_deliveries').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;

/** Queues `count` events to one endpoint, committed. */
const queueTo = (endpointId: string, count = 1) =>
  db.transaction().execute(async (tx) => {
    const ids: string[] = [];
    for (let index = 0; index < count; index++) {
      ids.push(
        ...(await queueEvent(tx, boss, { type: 'reading.completed', data: { index }, submissionId: null }, (eb) =>
          eb('id', '=', endpointId),
        )),
      );
    }
    return ids;
  });

t.test(`an account has at most WEBHOOK_ENDPOINTS_PER_ACCOUNT endpoints, exactly under concurrent adds`, async (t) => {
  const { client, accountId } = await signedIn();
  const adds = await Promise.all(
    Array.from({ length: 8 }, (_, index) =>
      client.post('/dashboard/webhooks', { url: `${receiver.url}/cap/${index}`, events: ['reading.completed'] }),
    ),
  );
  const statuses = adds.map((response) => response.status);
  t.equal(statuses.filter((code) => code === 200).length, ENDPOINT_CAP, 'as many added as the cap');
  t.equal(statuses.filter((code) => code === 409).length, 8 - ENDPOINT_CAP, 'the others refused');
  t.match(
    adds.find((response) => response.status === 409)?.text,
    `This account already has ${ENDPOINT_CAP} webhook endpoints, the most it may have (${ENDPOINT_CAP})`,
  );
  const { count } = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  t.equal(Number(count), ENDPOINT_CAP);

  const [first] = await db.selectFrom('webhook_endpoints').select('id').where('account_id', '=', accountId).execute();
  await client.post(`/dashboard/webhooks/${first.id}/disable`);
  t.equal(
    (await client.post('/dashboard/webhooks', { url: `${receiver.url}/cap/more`, events: ['reading.completed'] }))
      .status,
    409,
    'a disabled one still counts',
  );
  const other = await signedIn();
  t.equal(
    (
      await other.client.post('/dashboard/webhooks', {
        url: `${receiver.url}/cap/other`,
        events: ['reading.completed'],
      })
    ).status,
    200,
    'per account',
  );
});

t.test(
  `test events and redeliveries: at most ${MANUAL_SENDS_PER_MINUTE} a minute per endpoint, then 429 with Retry-After`,
  async (t) => {
    const { client, accountId } = await signedIn();
    const busy = await addEndpoint(accountId, '/manual/busy');
    const quiet = await addEndpoint(accountId, '/manual/quiet');
    const page = `/dashboard/webhooks/${busy}`;

    const burst = await Promise.all(
      Array.from({ length: MANUAL_SENDS_PER_MINUTE + 5 }, () => client.post(`${page}/test`)),
    );
    t.equal(
      burst.filter((response) => response.status === 303).length,
      MANUAL_SENDS_PER_MINUTE,
      'as many sent as the limit',
    );
    const refused = burst.filter((response) => response.status === 429);
    t.equal(refused.length, 5, 'the rest refused');
    const retryAfter = Number(refused[0].headers.get('retry-after'));
    t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After: ${retryAfter}`);
    t.match(
      refused[0].text,
      `At most ${MANUAL_SENDS_PER_MINUTE} test events and redeliveries a minute go to one endpoint. Try again in`,
    );

    const delivered = await deliveriesTo(busy);
    t.equal(delivered.length, MANUAL_SENDS_PER_MINUTE, 'the refused ones were not queued');
    for (const row of delivered) await attempt(row.id);
    t.equal(receiver.requestsTo('/manual/busy').length, MANUAL_SENDS_PER_MINUTE);
    const redeliver = `${page}/deliveries/${delivered[0].id}/redeliver`;
    t.equal((await client.post(redeliver)).status, 429, 'redeliveries share the limit');
    t.equal((await client.post(`/dashboard/webhooks/${quiet}/test`)).status, 303, 'another endpoint has its own');

    // The minute has passed for the sends so far.
    await sql`UPDATE webhook_manual_sends SET sent_at = sent_at - interval '1 minute'`.execute(db);
    t.equal((await client.post(redeliver)).status, 303);
    await attempt(delivered[0].id);
    t.equal(receiver.requestsTo('/manual/busy').length, MANUAL_SENDS_PER_MINUTE + 1);
  },
);

t.test(
  `and at most ${MANUAL_SENDS_PER_ACCOUNT_PER_MINUTE} a minute per account, which deleting an endpoint and adding it again does not reset`,
  async (t) => {
    const { client, accountId } = await signedIn();
    const endpoints = [];
    for (let i = 0; i < MANUAL_SENDS_PER_ACCOUNT_PER_MINUTE / MANUAL_SENDS_PER_MINUTE; i++)
      endpoints.push(await addEndpoint(accountId, `/account/${i}`));
    for (const id of endpoints) {
      for (let i = 0; i < MANUAL_SENDS_PER_MINUTE; i++)
        t.equal((await client.post(`/dashboard/webhooks/${id}/test`)).status, 303);
    }
    await deleteWebhookEndpoint(db, accountId, endpoints[0]!);
    const again = await addEndpoint(accountId, '/account/0');
    const refused = await client.post(`/dashboard/webhooks/${again}/test`);
    t.equal(refused.status, 429, 'the same URL added again');
    t.match(
      refused.text,
      `At most ${MANUAL_SENDS_PER_ACCOUNT_PER_MINUTE} test events and redeliveries a minute go to the endpoints of one account.`,
    );
    t.ok(Number(refused.headers.get('retry-after')) >= 1);
    const other = await signedIn();
    t.equal(
      (await other.client.post(`/dashboard/webhooks/${await addEndpoint(other.accountId, '/account/other')}/test`))
        .status,
      303,
      'another account has its own',
    );
  },
);

t.test('an endpoint whose attempts all fail for a day is disabled, the account told, and enabled again', async (t) => {
  const { client, accountId } = await signedIn();
  const down = await addEndpoint(accountId, '/run/down');
  const watcher = await addEndpoint(accountId, '/run/watcher', ['webhook_endpoint.disabled']);
  const deaf = await addEndpoint(accountId, '/run/deaf', ['reading.completed']);
  const moveRunBack = () =>
    db
      .updateTable('webhook_endpoints')
      .set({ failing_since: sql<Date>`now() - make_interval(hours => ${DISABLE_AFTER_FAILING_HOURS + 1})` })
      .where('id', '=', down)
      .execute();
  const failing = Array.from({ length: 3 * DISABLE_AFTER_FAILED_ATTEMPTS }, () => status(503));

  receiver.answer('/run/down', ...failing);
  const burst = await queueTo(down, DISABLE_AFTER_FAILED_ATTEMPTS + 5);
  for (const id of burst) await attempt(id);
  t.match(
    await endpoint(down),
    { enabled: true, consecutive_failures: DISABLE_AFTER_FAILED_ATTEMPTS + 5 },
    'a burst of failures in a short outage disables nothing',
  );

  await moveRunBack();
  receiver.answer('/run/down', status(204), ...failing);
  await attempt(burst[0]);
  t.match(await endpoint(down), { enabled: true, consecutive_failures: 0, failing_since: null }, 'a 2xx ends the run');

  const [first, ...rest] = burst.slice(1);
  for (const id of rest.slice(0, DISABLE_AFTER_FAILED_ATTEMPTS - 2)) await attempt(id);
  await moveRunBack();
  await attempt(rest[DISABLE_AFTER_FAILED_ATTEMPTS - 2]);
  t.match(
    await endpoint(down),
    { enabled: true, consecutive_failures: DISABLE_AFTER_FAILED_ATTEMPTS - 1 },
    `${DISABLE_AFTER_FAILED_ATTEMPTS - 1} failures over a day are not enough`,
  );
  const requestsBefore = receiver.requestsTo('/run/down').length;
  await attempt(first);
  t.equal(receiver.requestsTo('/run/down').length, requestsBefore + 1);

  const disabled = await endpoint(down);
  t.match(disabled, {
    enabled: false,
    disabled_reason: new RegExp(
      `^Every attempt since .* failed \\(${DISABLE_AFTER_FAILED_ATTEMPTS} attempts, over ${DISABLE_AFTER_FAILING_HOURS} hours\\); the last: The receiver answered HTTP 503 Service Unavailable$`,
    ),
  });
  const ended = await deliveriesTo(down);
  t.equal(ended.filter((row) => row.status === 'pending').length, 0, 'no delivery left pending');
  t.ok(
    ended
      .filter((row) => row.status === 'failed')
      .every(
        (row) => row.last_error === `Endpoint disabled: ${disabled.disabled_reason}` && row.next_attempt_at === null,
      ),
    'each says why it ended',
  );
  for (const row of ended.slice(-3)) await attempt(row.id);
  t.equal(receiver.requestsTo('/run/down').length, requestsBefore + 1, 'their scheduled retries send nothing');

  t.same(
    (await deliveriesTo(deaf)).map((row) => row.event_type),
    [],
    'an endpoint that did not choose the event gets none',
  );
  const [announced] = await deliveriesTo(watcher);
  t.match(announced, { event_type: 'webhook_endpoint.disabled', status: 'pending' });
  await attempt(announced.id);
  const [request] = receiver.requestsTo('/run/watcher');
  const { secret } = await endpoint(watcher);
  t.match(new Webhook(secret).verify(request.body, request.headers as Record<string, string>), {
    event: 'webhook_endpoint.disabled',
    data: {
      endpoint_id: Number(down),
      url: `${receiver.url}/run/down`,
      reason: disabled.disabled_reason,
      failing_since: String,
      failed_attempts: DISABLE_AFTER_FAILED_ATTEMPTS,
    },
  });

  const page = `/dashboard/webhooks/${down}`;
  const shown = await client.get(page);
  t.match(shown.text, 'badge-inactive');
  t.match(shown.text, 'No events are sent to this endpoint: Every attempt since');
  t.match(shown.text, `action="${page}/enable"`, 'an enable action');
  t.match((await client.get('/dashboard/webhooks')).text, 'HTTP 503 Service Unavailable', 'the list shows why');
  t.match((await client.post(`${page}/test`)).text, 'The endpoint is disabled');

  t.equal((await client.post(`${page}/enable`)).location, page);
  t.match(
    await endpoint(down),
    { enabled: true, disabled_reason: null, failing_since: null, consecutive_failures: 0 },
    'a fresh start',
  );
  receiver.answer('/run/down');
  t.equal(
    (await client.post(`${page}/deliveries/${ended[1].id}/redeliver`)).status,
    303,
    'what it missed can be redelivered',
  );
  await attempt(ended[1].id);
  t.equal(await deliveryStatus(ended[1].id), 'delivered');
});

t.test('410 Gone also tells the account; disabling by hand ends pending deliveries and tells nobody', async (t) => {
  const accountId = (await createAccount(db, { name: 'Gone' })).id;
  const gone = await addEndpoint(accountId, '/gone/endpoint');
  const watcher = await addEndpoint(accountId, '/gone/watcher', ['webhook_endpoint.disabled']);
  receiver.answer('/gone/endpoint', status(410));
  const [delivery, pending] = await queueTo(gone, 2);
  await attempt(delivery);
  t.match(await endpoint(gone), { enabled: false, disabled_reason: /410 Gone/ });
  t.match(await db.selectFrom('webhook_deliveries').selectAll().where('id', '=', pending).executeTakeFirstOrThrow(), {
    status: 'failed',
    last_error: /^Endpoint disabled: The receiver answered 410 Gone/,
  });
  t.match(await deliveriesTo(watcher), [
    { event_type: 'webhook_endpoint.disabled', payload: { data: { endpoint_id: Number(gone), failed_attempts: 1 } } },
  ]);

  const { client, accountId: handAccount } = await signedIn();
  const byHand = await addEndpoint(handAccount, '/hand/endpoint');
  const handWatcher = await addEndpoint(handAccount, '/hand/watcher', ['webhook_endpoint.disabled']);
  const [queued] = await queueTo(byHand);
  await client.post(`/dashboard/webhooks/${byHand}/disable`);
  t.match(await db.selectFrom('webhook_deliveries').selectAll().where('id', '=', queued).executeTakeFirstOrThrow(), {
    status: 'failed',
    next_attempt_at: null,
    last_error: 'Endpoint disabled: Disabled by the account',
  });
  t.same(await deliveriesTo(handWatcher), [], 'the account disabled it itself');
});
