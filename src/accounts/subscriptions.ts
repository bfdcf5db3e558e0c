import { sql } from 'kysely';
import type { PgBoss } from 'pg-boss';
import type { Db, Tx } from '../db/database.ts';
import type { SubscriptionStatus } from '../db/schema.ts';
import { DomainError, requireId } from '../errors.ts';
import { queueAccountEvent } from '../webhooks/deliver.ts';
import type { WebhookEvent } from '../webhooks/events.ts';
import { requireAccount } from './require-account.ts';
import { subscriptionState, type SubscriptionState } from './subscription-state.ts';

/** Every statement that reads a subscription returns its state with it. */
const state = subscriptionState().as('state');

export interface Subscription {
  accountId: string;
  planCode: string;
  status: SubscriptionStatus;
  state: SubscriptionState;
  periodStart: Date;
  periodEnd: Date;
  updatedAt: Date;
}

/**
 * Creates or replaces the account's subscription, active from now for `months` (default 1) or
 * until the given date. A past `until` records a subscription that has already expired; its
 * period then starts a month before it ends, since a period must start before it ends.
 * Runs as one statement, so callers may pass a transaction.
 */
export async function setSubscription(
  db: Db,
  input: { accountId: string | number; planCode: string; months?: number; until?: Date },
): Promise<Subscription> {
  const accountId = await requireAccount(db, input.accountId);
  await requirePlan(db, input.planCode);
  const period = subscriptionPeriod(input);
  const row = await db
    .insertInto('subscriptions')
    .values({ account_id: accountId, plan_code: input.planCode, status: 'active', ...period })
    .onConflict((conflict) =>
      conflict.column('account_id').doUpdateSet({
        plan_code: input.planCode,
        status: 'active',
        ...period,
        updated_at: sql<Date>`now()`,
      }),
    )
    .returningAll()
    .returning(state)
    .executeTakeFirstOrThrow();
  return toSubscription(row);
}

/** Marks the subscription cancelled; its period is kept as the record of what was paid for. */
export async function cancelSubscription(db: Db, accountId: string | number): Promise<Subscription> {
  const row = await db
    .updateTable('subscriptions')
    .set({ status: 'cancelled', updated_at: sql<Date>`now()` })
    .where('account_id', '=', requireId(accountId, 'account id'))
    .returningAll()
    .returning(state)
    .executeTakeFirst();
  if (!row) throw new DomainError('not_found', 'account id', `account ${accountId} has no subscription`);
  return toSubscription(row);
}

export type SubscriptionChange =
  | { action: 'set'; accountId: string | number; planCode: string; months?: number; until?: Date }
  | { action: 'cancel'; accountId: string | number };

/**
 * A change the account's webhook endpoints hear about (the CLI's `subscriptions set|cancel`):
 * the change and its `subscription.*` event are committed in one transaction. Creating an
 * account with a plan uses setSubscription alone: a new account has no endpoint to tell yet.
 */
export async function changeSubscription(
  deps: { db: Db; boss: PgBoss },
  change: SubscriptionChange,
): Promise<Subscription> {
  return deps.db.transaction().execute((tx) => applySubscriptionChange(tx, deps.boss, change));
}

/** changeSubscription inside the caller's transaction (an email verification that starts a trial). */
export async function applySubscriptionChange(tx: Tx, boss: PgBoss, change: SubscriptionChange): Promise<Subscription> {
  const previousRow = await tx
    .selectFrom('subscriptions')
    .selectAll()
    .select(state)
    .where('account_id', '=', requireId(change.accountId, 'account id'))
    .forUpdate()
    .executeTakeFirst();
  const previous = previousRow && toSubscription(previousRow);
  const current =
    change.action === 'cancel' ? await cancelSubscription(tx, change.accountId) : await setSubscription(tx, change);
  const type = subscriptionEventType(previous, current);
  if (type) await announceSubscription(tx, boss, type, current, previous);
  return current;
}

function subscriptionEventType(previous: Subscription | undefined, current: Subscription): WebhookEvent | undefined {
  if (!previous) return 'subscription.created';
  if (current.status === 'cancelled') return previous.status === 'cancelled' ? undefined : 'subscription.cancelled';
  const extended = current.planCode === previous.planCode && current.periodEnd > previous.periodEnd;
  return extended ? 'subscription.renewed' : 'subscription.updated';
}

/**
 * The scheduled job (every minute): each active subscription whose period has ended is
 * announced as `subscription.expired` once per period end, marked in the same transaction.
 */
export async function announceExpiredSubscriptions(deps: { db: Db; boss: PgBoss }): Promise<number> {
  return deps.db.transaction().execute(async (tx) => {
    const expired = await tx
      .updateTable('subscriptions')
      .set({ expiry_announced_for: sql<Date>`period_end` })
      .where(subscriptionState(), '=', 'expired')
      .where(sql<boolean>`expiry_announced_for IS DISTINCT FROM period_end`)
      .returningAll()
      .returning(state)
      .execute();
    for (const row of expired)
      await announceSubscription(tx, deps.boss, 'subscription.expired', toSubscription(row), undefined);
    return expired.length;
  });
}

async function announceSubscription(
  tx: Tx,
  boss: PgBoss,
  type: WebhookEvent,
  current: Subscription,
  previous: Subscription | undefined,
): Promise<void> {
  await queueAccountEvent(tx, boss, {
    accountId: current.accountId,
    type,
    data: {
      account_id: Number(current.accountId),
      ...subscriptionTerms(current),
      previous: previous ? subscriptionTerms(previous) : null,
    },
  });
}

function subscriptionTerms(subscription: Subscription) {
  return {
    plan: subscription.planCode,
    status: subscription.state,
    period_start: subscription.periodStart.toISOString(),
    period_end: subscription.periodEnd.toISOString(),
  };
}

/** undefined when the account has never had a subscription. */
export async function getSubscription(db: Db, accountId: string | number): Promise<Subscription | undefined> {
  const row = await db
    .selectFrom('subscriptions')
    .selectAll()
    .select(state)
    .where('account_id', '=', requireId(accountId, 'account id'))
    .executeTakeFirst();
  return row && toSubscription(row);
}

function subscriptionPeriod(input: { months?: number; until?: Date }) {
  if (input.months !== undefined && input.until !== undefined) {
    throw new DomainError('invalid', 'months', 'give either a number of months or an end date, not both');
  }
  if (input.until !== undefined) {
    if (Number.isNaN(input.until.getTime()))
      throw new DomainError('invalid', 'until', 'the end date is not a valid date');
    const until = sql<Date>`${input.until}::timestamptz`;
    return {
      period_start: sql<Date>`CASE WHEN ${until} > now() THEN now() ELSE ${until} - interval '1 month' END`,
      period_end: until,
    };
  }
  const months = input.months ?? 1;
  if (!Number.isInteger(months) || months < 1) {
    throw new DomainError('invalid', 'months', `months must be a positive integer, got ${months}`);
  }
  return { period_start: sql<Date>`now()`, period_end: sql<Date>`now() + make_interval(months => ${months})` };
}

async function requirePlan(db: Db, planCode: string): Promise<void> {
  const plan = await db.selectFrom('plans').select('code').where('code', '=', planCode).executeTakeFirst();
  if (!plan) throw new DomainError('not_found', 'plan code', `no plan with code "${planCode}"`);
}

function toSubscription(row: {
  account_id: string;
  plan_code: string;
  status: SubscriptionStatus;
  state: SubscriptionState;
  period_start: Date;
  period_end: Date;
  updated_at: Date;
}): Subscription {
  return {
    accountId: row.account_id,
    planCode: row.plan_code,
    status: row.status,
    state: row.state,
    periodStart: row.period_start,
    periodEnd: row.period_end,
    updatedAt: row.updated_at,
  };
}
