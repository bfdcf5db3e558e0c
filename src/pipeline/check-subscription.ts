import type { SubscriptionState } from '../accounts/subscription-state.ts';
import { DomainError } from '../errors.ts';

export interface ActivePlan {
  planCode: string;
  monthlyRequestLimit: number;
}

export interface PlanSubscription extends ActivePlan {
  state: SubscriptionState;
  periodEnd: Date;
}

/** Step 2: the account has a subscription that is active now (loaded with the key by `authenticate`). */
export function checkSubscription(subscription: PlanSubscription | undefined): ActivePlan {
  if (!subscription) throw subscriptionError('No subscription: the account needs an active plan to use the API');
  if (subscription.state === 'cancelled') throw subscriptionError('Subscription cancelled');
  if (subscription.state === 'expired') {
    throw subscriptionError(`Subscription expired on ${subscription.periodEnd.toISOString()}`);
  }
  return { planCode: subscription.planCode, monthlyRequestLimit: subscription.monthlyRequestLimit };
}

function subscriptionError(message: string): DomainError {
  return new DomainError('refused', 'subscription', message);
}
