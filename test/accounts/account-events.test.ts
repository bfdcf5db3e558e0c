import { sql } from 'kysely';
import t from 'tap';
import { announceExpiredSubscriptions, changeSubscription } from '../../src/accounts/subscriptions.ts';
import { createPlan } from '../../src/accounts/plans.ts';
import { usageMonth } from '../../src/pipeline/check-usage.ts';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../../src/webhooks/events.ts';
import { newWebhookSecret } from '../../src/webhooks/signature.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { createCustomer, startTestService, submitPhoto, type TestService } from '../helpers/service.ts';

// No worker: deliveries stay pending rows, which is what these tests count.
const service = await startTestService(t, { worker: false });
const { db, boss } = service;
const photo = await renderMeterPhoto();

async function addEndpoint(accountId: string, events: readonly WebhookEvent[] = WEBHOOK_EVENTS) {
  await db
    .insertInto('webhook_endpoints')
    .values({
      account_id: accountId,
      url: 'http://127.0.0.1:9/hook',
      secret: newWebhookSecret(),
      events: [...events],
      disabled_reason: null,
    })
    .execute();
}

async function eventsOf(accountId: string, prefix: string) {
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .select(['d.event_type', 'd.payload'])
    .where('e.account_id', '=', accountId)
    .where(sql<boolean>`d.event_type LIKE ${`${prefix}%`}`)
    .orderBy('d.id')
    .execute();
  return rows.map((row) => ({ type: row.event_type, data: (row.payload as { data: Record<string, unknown> }).data }));
}

/** Moves the subscription's period back so that it ended a second ago. */
async function endPeriod(accountId: string) {
  await db
    .updateTable('subscriptions')
    .set({ period_start: sql<Date>`now() - interval '1 month'`, period_end: sql<Date>`now() - interval '1 second'` })
    .where('account_id', '=', accountId)
    .execute();
}

async function submitConcurrently(service: TestService, key: string, count: number) {
  const responses = await Promise.all(Array.from({ length: count }, () => submitPhoto(service, { key, image: photo })));
  return responses.map((response) => response.status);
}

t.test('usage events: exactly one of each under 20 concurrent submissions crossing both milestones', async (t) => {
  const customer = await createCustomer(db, { monthlyLimit: 25 });
  await addEndpoint(customer.accountId);
  // 10 already counted: the 20 cross 80% (20) and reach the limit (25); 5 are refused.
  await db
    .insertInto('api_usage')
    .values({ account_id: customer.accountId, month: usageMonth(), request_count: 10 })
    .execute();
  const statuses = await submitConcurrently(service, customer.key, 20);
  t.equal(statuses.filter((status) => status === 202).length, 15);
  t.equal(statuses.filter((status) => status === 422).length, 5);
  const events = await eventsOf(customer.accountId, 'usage.');
  const planCode = (
    await db
      .selectFrom('subscriptions')
      .select('plan_code')
      .where('account_id', '=', customer.accountId)
      .executeTakeFirstOrThrow()
  ).plan_code;
  const month = usageMonth().slice(0, 7);
  t.same(events, [
    { type: 'usage.threshold_reached', data: { month, count: 20, limit: 25, plan: planCode } },
    { type: 'usage.limit_reached', data: { month, count: 25, limit: 25, plan: planCode } },
  ]);

  t.equal((await submitConcurrently(service, customer.key, 3)).filter((status) => status === 202).length, 0);
  t.equal((await eventsOf(customer.accountId, 'usage.')).length, 2, 'refusals at the limit announce nothing more');
});

t.test('usage events go only to endpoints that chose them, once a month even if the plan changes', async (t) => {
  const customer = await createCustomer(db, { monthlyLimit: 5 });
  await addEndpoint(customer.accountId, ['reading.completed']);
  await addEndpoint(customer.accountId, ['usage.threshold_reached']);
  const statuses = await submitConcurrently(service, customer.key, 5);
  t.same(statuses, [202, 202, 202, 202, 202]);
  t.same(
    (await eventsOf(customer.accountId, 'usage.')).map((event) => event.type),
    ['usage.threshold_reached'],
  );

  // A bigger plan mid-month: the threshold of this month was announced already.
  await createPlan(db, { code: `bigger_${customer.accountId}`, name: 'Bigger', monthlyRequestLimit: 6 });
  await changeSubscription(
    { db, boss },
    { action: 'set', accountId: customer.accountId, planCode: `bigger_${customer.accountId}`, months: 1 },
  );
  t.equal((await submitPhoto(service, { key: customer.key, image: photo })).status, 202);
  t.same(
    (await eventsOf(customer.accountId, 'usage.')).map((event) => event.type),
    ['usage.threshold_reached'],
  );
});

t.test(
  'subscription events: created, renewed, updated, cancelled, each in the transaction of the change',
  async (t) => {
    const customer = await createCustomer(db, { subscription: 'none' });
    await addEndpoint(customer.accountId);
    const change = (planCode: string, months: number) =>
      changeSubscription({ db, boss }, { action: 'set', accountId: customer.accountId, planCode, months });
    await change('starter', 1);
    await change('starter', 12);
    await change('pro', 12);
    await changeSubscription({ db, boss }, { action: 'cancel', accountId: customer.accountId });
    await changeSubscription({ db, boss }, { action: 'cancel', accountId: customer.accountId });
    const events = await eventsOf(customer.accountId, 'subscription.');
    t.same(
      events.map((event) => event.type),
      ['subscription.created', 'subscription.renewed', 'subscription.updated', 'subscription.cancelled'],
      'cancelling a cancelled subscription announces nothing',
    );
    t.match(events[0].data, {
      account_id: Number(customer.accountId),
      plan: 'starter',
      status: 'active',
      previous: null,
    });
    t.match(events[2].data, { plan: 'pro', previous: { plan: 'starter', status: 'active' } });
    t.match(events[3].data, { plan: 'pro', status: 'cancelled', previous: { plan: 'pro', status: 'active' } });

    await t.rejects(change('no-such-plan', 1));
    t.equal((await eventsOf(customer.accountId, 'subscription.')).length, 4, 'a refused change announces nothing');
  },
);

t.test('subscription.expired: found by the scheduled job once per period end', async (t) => {
  const customer = await createCustomer(db);
  await addEndpoint(customer.accountId);
  await endPeriod(customer.accountId);
  await announceExpiredSubscriptions({ db, boss });
  await announceExpiredSubscriptions({ db, boss });
  const expired = await eventsOf(customer.accountId, 'subscription.expired');
  t.equal(expired.length, 1, 'announced once');
  t.match(expired[0].data, { status: 'expired' });

  // Renewed, then expired again: a new period end, a new announcement.
  await changeSubscription(
    { db, boss },
    { action: 'set', accountId: customer.accountId, planCode: 'starter', months: 1 },
  );
  await endPeriod(customer.accountId);
  await announceExpiredSubscriptions({ db, boss });
  t.equal((await eventsOf(customer.accountId, 'subscription.expired')).length, 2);
});
