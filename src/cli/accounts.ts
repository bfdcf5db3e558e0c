import { type AccountSummary, createAccount, listAccounts } from '../accounts/accounts.ts';
import { optionalOption, requiredOption } from './args.ts';
import type { Command } from './context.ts';
import { jsonId, table } from './output.ts';
import { describeSubscription, subscriptionJson } from './subscriptions.ts';

export const accountCommands: Command[] = [
  {
    name: 'accounts create',
    synopsis: '--name NAME [--plan CODE]',
    description: 'create an account; with --plan it gets an active one-month subscription',
    options: { name: { type: 'string' }, plan: { type: 'string' } },
    async run({ database, output }, args) {
      const input = { name: requiredOption(args, 'name'), planCode: optionalOption(args, 'plan') };
      const account = await createAccount(await database(), input);
      const { subscription } = account;
      output.print(
        { ...account, id: jsonId(account.id), subscription: subscription && subscriptionJson(subscription) },
        [
          `created account ${account.id} "${account.name}"`,
          ...(subscription ? [describeSubscription(subscription)] : []),
        ],
      );
    },
  },
  {
    name: 'accounts list',
    synopsis: '',
    description: 'list the accounts with their subscription and number of users',
    async run({ database, output }) {
      const accounts = await listAccounts(await database());
      output.print(
        { accounts: accounts.map((account) => ({ ...account, id: jsonId(account.id) })) },
        table(
          ['ID', 'NAME', 'PLAN', 'SUBSCRIPTION', 'USERS', 'CREATED'],
          accounts.map((account) => [
            account.id,
            account.name,
            account.planCode ?? '—',
            describeState(account),
            String(account.users),
            account.createdAt.toISOString(),
          ]),
        ),
      );
    },
  },
];

function describeState(account: AccountSummary): string {
  if (account.state === 'active') return `active until ${account.periodEnd?.toISOString()}`;
  if (account.state === 'expired') return `expired on ${account.periodEnd?.toISOString()}`;
  if (account.state === 'cancelled') return 'cancelled';
  return account.trialPlanCode ? `none: ${account.trialPlanCode} starts once the email is verified` : 'none';
}
