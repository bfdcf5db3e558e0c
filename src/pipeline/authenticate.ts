import { sql } from 'kysely';
import { API_KEY_PATTERN, hashApiKey } from '../accounts/api-key-format.ts';
import { subscriptionState, type SubscriptionState } from '../accounts/subscription-state.ts';
import type { Db } from '../db/database.ts';
import { DomainError } from '../errors.ts';
import type { PlanSubscription } from './check-subscription.ts';
import { usageMonth } from './check-usage.ts';

/** The word `Bearer`, exactly one space, the key. */
const BEARER = /^Bearer ([^ ]+)$/;

export interface AuthenticatedKey {
  keyId: string;
  accountId: string;
  /** The account's subscription and plan, loaded with the key for step 2. */
  subscription: PlanSubscription | undefined;
  /** Accepted submissions this month, loaded with the key for step 3. */
  monthlyUsage: number;
}

/**
 * Step 1: the Authorization header names an active, undeleted key. Reads headers only. The same
 * statement loads what steps 2 and 3 check (subscription, plan, this month's usage), so the
 * checks before the upload cost one round trip to the database.
 */
export async function authenticate(db: Db, authorization: string | undefined): Promise<AuthenticatedKey> {
  const key = BEARER.exec(authorization ?? '')?.[1];
  if (!key || !API_KEY_PATTERN.test(key)) throw invalidKey();
  const row = await db
    .selectFrom('api_keys as k')
    .leftJoin('subscriptions as s', 's.account_id', 'k.account_id')
    .leftJoin('plans as p', 'p.code', 's.plan_code')
    .leftJoin('api_usage as u', (join) =>
      join.onRef('u.account_id', '=', 'k.account_id').on('u.month', '=', sql<string>`${usageMonth()}::date`),
    )
    .select([
      'k.id',
      'k.account_id',
      's.period_end',
      'p.code as plan_code',
      'p.monthly_request_limit',
      'u.request_count',
    ])
    .select(subscriptionState('s').$castTo<SubscriptionState | null>().as('state'))
    .where('k.key_sha256', '=', hashApiKey(key))
    .where('k.status', '=', 'active')
    .where('k.deleted_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw invalidKey();
  const subscription =
    row.state && row.period_end && row.plan_code && row.monthly_request_limit !== null
      ? {
          state: row.state,
          periodEnd: row.period_end,
          planCode: row.plan_code,
          monthlyRequestLimit: row.monthly_request_limit,
        }
      : undefined;
  return { keyId: row.id, accountId: row.account_id, subscription, monthlyUsage: row.request_count ?? 0 };
}

function invalidKey(): DomainError {
  return new DomainError('refused', 'authorization', 'Invalid or inactive API key');
}
