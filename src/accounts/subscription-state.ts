import { sql, type RawBuilder } from 'kysely';

/** `status` as stored, plus what it means now: an active subscription past its period_end is expired. */
export type SubscriptionState = 'active' | 'expired' | 'cancelled';

/**
 * The one definition of a subscription's state, worked out by the database wherever a subscription
 * is read (the API's subscription check, the dashboard, the CLI) and by the expiry job, which
 * selects the subscriptions to announce by it; one clock, the database's, decides for all of them.
 * `table` is the name or alias the query gives `subscriptions`; no subscription (a left join) is NULL.
 */
export function subscriptionState(table = 'subscriptions'): RawBuilder<SubscriptionState> {
  const status = sql.ref(`${table}.status`);
  const periodEnd = sql.ref(`${table}.period_end`);
  return sql<SubscriptionState>`CASE ${status}
    WHEN 'cancelled' THEN 'cancelled'
    WHEN 'active' THEN CASE WHEN ${periodEnd} <= now() THEN 'expired' ELSE 'active' END
  END`;
}
