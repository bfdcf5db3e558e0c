import type { Db } from '../db/database.ts';
import { ApiError } from '../errors.ts';

export interface ActivePlan {
  planCode: string;
  monthlyRequestLimit: number;
}

/** Step 2: the account has a subscription that is active now. */
export async function checkSubscription(db: Db, accountId: string): Promise<ActivePlan> {
  const subscription = await db
    .selectFrom('subscriptions')
    .innerJoin('plans', 'plans.code', 'subscriptions.plan_code')
    .select(['subscriptions.status', 'subscriptions.period_end', 'plans.code', 'plans.monthly_request_limit'])
    .where('subscriptions.account_id', '=', accountId)
    .executeTakeFirst();
  if (!subscription) throw subscriptionError('No subscription: the account needs an active plan to use the API');
  if (subscription.status === 'cancelled') throw subscriptionError('Subscription cancelled');
  if (subscription.period_end.getTime() <= Date.now()) {
    throw subscriptionError(`Subscription expired on ${subscription.period_end.toISOString()}`);
  }
  return { planCode: subscription.code, monthlyRequestLimit: subscription.monthly_request_limit };
}

function subscriptionError(message: string): ApiError {
  return new ApiError(422, 'subscription', message);
}
