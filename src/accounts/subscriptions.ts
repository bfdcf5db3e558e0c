import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { SubscriptionStatus } from '../db/schema.ts';
import { requireAccount } from './accounts.ts';
import { InvalidInputError, NotFoundError, requireId } from './errors.ts';

/** `status` as stored, plus what it means now: an active subscription past its period_end is expired. */
export type SubscriptionState = 'active' | 'expired' | 'cancelled';

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
    .executeTakeFirst();
  if (!row) throw new NotFoundError(`account ${accountId} has no subscription`);
  return toSubscription(row);
}

/** undefined when the account has never had a subscription. */
export async function getSubscription(db: Db, accountId: string | number): Promise<Subscription | undefined> {
  const row = await db
    .selectFrom('subscriptions')
    .selectAll()
    .where('account_id', '=', requireId(accountId, 'account id'))
    .executeTakeFirst();
  return row && toSubscription(row);
}

function subscriptionPeriod(input: { months?: number; until?: Date }) {
  if (input.months !== undefined && input.until !== undefined) {
    throw new InvalidInputError('give either a number of months or an end date, not both');
  }
  if (input.until !== undefined) {
    if (Number.isNaN(input.until.getTime())) throw new InvalidInputError('the end date is not a valid date');
    const until = sql<Date>`${input.until}::timestamptz`;
    return {
      period_start: sql<Date>`CASE WHEN ${until} > now() THEN now() ELSE ${until} - interval '1 month' END`,
      period_end: until,
    };
  }
  const months = input.months ?? 1;
  if (!Number.isInteger(months) || months < 1) {
    throw new InvalidInputError(`months must be a positive integer, got ${months}`);
  }
  return { period_start: sql<Date>`now()`, period_end: sql<Date>`now() + make_interval(months => ${months})` };
}

async function requirePlan(db: Db, planCode: string): Promise<void> {
  const plan = await db.selectFrom('plans').select('code').where('code', '=', planCode).executeTakeFirst();
  if (!plan) throw new NotFoundError(`no plan with code "${planCode}"`);
}

function toSubscription(row: {
  account_id: string;
  plan_code: string;
  status: SubscriptionStatus;
  period_start: Date;
  period_end: Date;
  updated_at: Date;
}): Subscription {
  const state: SubscriptionState =
    row.status === 'cancelled' ? 'cancelled' : row.period_end.getTime() <= Date.now() ? 'expired' : 'active';
  return {
    accountId: row.account_id,
    planCode: row.plan_code,
    status: row.status,
    state,
    periodStart: row.period_start,
    periodEnd: row.period_end,
    updatedAt: row.updated_at,
  };
}
