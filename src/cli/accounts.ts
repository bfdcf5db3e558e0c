import { createAccount } from '../accounts/accounts.ts';
import { optionalOption, requiredOption } from './args.ts';
import type { Command } from './context.ts';
import { jsonId } from './output.ts';
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
      output.print({ ...account, id: jsonId(account.id), subscription: subscription && subscriptionJson(subscription) }, [
        `created account ${account.id} "${account.name}"`,
        ...(subscription ? [describeSubscription(subscription)] : []),
      ]);
    },
  },
];
