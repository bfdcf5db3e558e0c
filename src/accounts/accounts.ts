import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { requireText } from '../errors.ts';
import { type SubscriptionState, subscriptionState } from './subscription-state.ts';
import { setSubscription, type Subscription } from './subscriptions.ts';

export interface Account {
  id: string;
  name: string;
  createdAt: Date;
  /** Present when the account was created with a plan. */
  subscription?: Subscription;
}

/**
 * With a plan, the account starts with an active one-month subscription; both or neither are stored.
 * With a trial plan instead, it starts with none and gets that plan once its user's email is
 * verified (accounts/email-verification.ts).
 * `db` may be a transaction (sign-up's), which the account then joins; otherwise it gets its own.
 */
export async function createAccount(
  db: Db,
  input: { name: string; planCode?: string; trialPlanCode?: string },
): Promise<Account> {
  const name = requireText(input.name, 'account name');
  const create = async (tx: Db) => {
    const row = await tx
      .insertInto('accounts')
      .values({ name, trial_plan_code: input.trialPlanCode })
      .returningAll()
      .executeTakeFirstOrThrow();
    const account: Account = { id: row.id, name: row.name, createdAt: row.created_at };
    if (input.planCode !== undefined) {
      account.subscription = await setSubscription(tx, { accountId: row.id, planCode: input.planCode, months: 1 });
    }
    return account;
  };
  return db.isTransaction ? create(db) : db.transaction().execute(create);
}

/** An account as `meterlens accounts list` shows it; plan, state and period end are null without a subscription. */
export interface AccountSummary {
  id: string;
  name: string;
  createdAt: Date;
  users: number;
  planCode: string | null;
  state: SubscriptionState | null;
  periodEnd: Date | null;
  /** The trial that starts once the account's user verifies their email. */
  trialPlanCode: string | null;
}

export async function listAccounts(db: Db): Promise<AccountSummary[]> {
  return db
    .selectFrom('accounts as a')
    .leftJoin('subscriptions as s', 's.account_id', 'a.id')
    .select((eb) => [
      'a.id',
      'a.name',
      'a.created_at as createdAt',
      eb
        .selectFrom('users as u')
        .select(sql<number>`count(*)::int`.as('n'))
        .whereRef('u.account_id', '=', 'a.id')
        .$asScalar()
        .$notNull()
        .as('users'),
      's.plan_code as planCode',
      subscriptionState('s').$castTo<SubscriptionState | null>().as('state'),
      's.period_end as periodEnd',
      'a.trial_plan_code as trialPlanCode',
    ])
    .orderBy('a.id')
    .execute();
}
