import { requireAccount } from '../accounts/require-account.ts';
import { changeSubscription, getSubscription, type Subscription } from '../accounts/subscriptions.ts';
import { DomainError, requireId } from '../errors.ts';
import { dateOption, integerOption, requiredOption, UsageError, type CommandArgs } from './args.ts';
import type { Command } from './context.ts';
import { jsonId } from './output.ts';

export const subscriptionCommands: Command[] = [
  {
    name: 'subscriptions show',
    synopsis: '--account ID',
    description: "show an account's subscription: plan, state and period",
    options: { account: { type: 'string' } },
    async run({ database, output }, args) {
      const db = await database();
      const accountId = await requireAccount(db, requireId(requiredOption(args, 'account'), '--account'));
      const subscription = await getSubscription(db, accountId);
      if (!subscription) throw new DomainError('not_found', 'account id', `account ${accountId} has no subscription`);
      output.print(subscriptionJson(subscription), describeSubscription(subscription));
    },
  },
  {
    name: 'subscriptions set',
    synopsis: '--account ID --plan CODE (--months N | --until DATE)',
    description: "start or replace an account's subscription; a past --until records an expired one",
    options: {
      account: { type: 'string' },
      plan: { type: 'string' },
      months: { type: 'string' },
      until: { type: 'string' },
    },
    async run({ database, queue, output }, args) {
      const change = {
        action: 'set' as const,
        accountId: requireId(requiredOption(args, 'account'), '--account'),
        planCode: requiredOption(args, 'plan'),
        ...subscriptionTerm(args),
      };
      const subscription = await changeSubscription({ db: await database(), boss: await queue() }, change);
      output.print(subscriptionJson(subscription), describeSubscription(subscription));
    },
  },
  {
    name: 'subscriptions cancel',
    synopsis: '--account ID',
    description: "cancel an account's subscription",
    options: { account: { type: 'string' } },
    async run({ database, queue, output }, args) {
      const accountId = requireId(requiredOption(args, 'account'), '--account');
      const subscription = await changeSubscription(
        { db: await database(), boss: await queue() },
        { action: 'cancel', accountId },
      );
      output.print(subscriptionJson(subscription), describeSubscription(subscription));
    },
  },
];

export function subscriptionJson(subscription: Subscription): object {
  return { ...subscription, accountId: jsonId(subscription.accountId) };
}

export function describeSubscription(subscription: Subscription): string {
  const end = subscription.periodEnd.toISOString();
  const when = { active: `active until ${end}`, expired: `expired on ${end}`, cancelled: 'cancelled' }[
    subscription.state
  ];
  return `account ${subscription.accountId}: plan ${subscription.planCode}, ${when}`;
}

function subscriptionTerm(args: CommandArgs): { months: number } | { until: Date } {
  const hasMonths = args.values.months !== undefined;
  if (hasMonths === (args.values.until !== undefined)) throw new UsageError('give exactly one of --months and --until');
  return hasMonths ? { months: integerOption(args, 'months', 1) } : { until: dateOption(args, 'until') };
}
