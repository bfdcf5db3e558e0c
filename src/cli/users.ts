import { generatePassword } from '../accounts/passwords.ts';
import { createUser } from '../accounts/users.ts';
import { requireId } from '../errors.ts';
import { optionalOption, requiredOption } from './args.ts';
import type { Command } from './context.ts';
import { jsonId } from './output.ts';

export const userCommands: Command[] = [
  {
    name: 'users create',
    synopsis: '--account ID --email EMAIL [--password PASSWORD]',
    description: 'create a dashboard user for an account; without --password one is generated and shown this once',
    options: { account: { type: 'string' }, email: { type: 'string' }, password: { type: 'string' } },
    async run({ database, output }, args) {
      const given = optionalOption(args, 'password');
      const password = given ?? generatePassword();
      const input = { accountId: requireId(requiredOption(args, 'account'), '--account'), email: requiredOption(args, 'email'), password };
      const { id } = await createUser(await database(), input);
      const generated = given === undefined ? { password } : {};
      output.print({ id: jsonId(id), accountId: jsonId(input.accountId), email: input.email.trim(), ...generated }, [
        `created user ${id} (${input.email.trim()}) for account ${input.accountId}`,
        ...(given === undefined ? ['password (shown this once, store it now):', password] : []),
      ]);
    },
  },
];
