import { createPlan, listPlans, type Plan } from '../accounts/plans.ts';
import { integerOption, requiredOption } from './args.ts';
import type { Command } from './context.ts';
import { table } from './output.ts';

export const planCommands: Command[] = [
  {
    name: 'plans create',
    synopsis: '--code CODE --name NAME --limit REQUESTS_PER_MONTH',
    description: 'add a plan accounts can subscribe to',
    options: { code: { type: 'string' }, name: { type: 'string' }, limit: { type: 'string' } },
    async run({ database, output }, args) {
      const input = {
        code: requiredOption(args, 'code'),
        name: requiredOption(args, 'name'),
        monthlyRequestLimit: integerOption(args, 'limit', 0),
      };
      const plan = await createPlan(await database(), input);
      output.print(plan, `created plan ${plan.code} "${plan.name}" (${plan.monthlyRequestLimit} requests a month)`);
    },
  },
  {
    name: 'plans list',
    synopsis: '',
    description: 'list the plans, smallest first',
    async run({ database, output }) {
      const plans = await listPlans(await database());
      output.print({ plans }, table(['CODE', 'NAME', 'REQUESTS/MONTH'], plans.map(planRow)));
    },
  },
];

function planRow(plan: Plan): string[] {
  return [plan.code, plan.name, String(plan.monthlyRequestLimit)];
}
