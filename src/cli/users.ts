import { createResetLink, RESET_LINK_HOURS, RESET_PASSWORD_PATH } from '../accounts/password-reset.ts';
import { generatePassword } from '../accounts/passwords.ts';
import { requireAccount } from '../accounts/require-account.ts';
import { createUser, listUsers } from '../accounts/users.ts';
import { DomainError, requireId } from '../errors.ts';
import { optionalOption, requiredOption } from './args.ts';
import type { Command } from './context.ts';
import { jsonId, table } from './output.ts';

export const userCommands: Command[] = [
  {
    name: 'users create',
    synopsis: '--account ID --email EMAIL [--password PASSWORD]',
    description: 'create a dashboard user for an account; without --password one is generated and shown this once',
    options: { account: { type: 'string' }, email: { type: 'string' }, password: { type: 'string' } },
    async run({ database, output }, args) {
      const given = optionalOption(args, 'password');
      const password = given ?? generatePassword();
      const input = {
        accountId: requireId(requiredOption(args, 'account'), '--account'),
        email: requiredOption(args, 'email'),
        password,
      };
      const { id } = await createUser(await database(), input);
      const generated = given === undefined ? { password } : {};
      output.print({ id: jsonId(id), accountId: jsonId(input.accountId), email: input.email.trim(), ...generated }, [
        `created user ${id} (${input.email.trim()}) for account ${input.accountId}`,
        ...(given === undefined ? ['password (shown this once, store it now):', password] : []),
      ]);
    },
  },
  {
    name: 'users list',
    synopsis: '[--account ID]',
    description: "list the dashboard users, every account's or one account's, with their role",
    options: { account: { type: 'string' } },
    async run({ database, output }, args) {
      const db = await database();
      const account = optionalOption(args, 'account');
      const users = await listUsers(
        db,
        account === undefined ? undefined : await requireAccount(db, requireId(account, '--account')),
      );
      output.print(
        { users: users.map((user) => ({ ...user, id: jsonId(user.id), accountId: jsonId(user.accountId) })) },
        table(
          ['ID', 'ACCOUNT', 'EMAIL', 'ROLE', 'CREATED', 'LAST SIGN-IN'],
          users.map((user) => [
            user.id,
            user.accountId,
            user.email,
            user.role,
            user.createdAt.toISOString(),
            user.lastLoginAt?.toISOString() ?? 'never',
          ]),
        ),
      );
    },
  },
  {
    name: 'users reset-link',
    synopsis: '--email EMAIL',
    description: `print a link that sets a new password for the user (it works once, within ${RESET_LINK_HOURS} hour, and ends their sessions); to PUBLIC_URL, or else http://localhost:PORT`,
    options: { email: { type: 'string' } },
    async run({ config, database, output }, args) {
      const email = requiredOption(args, 'email');
      const resetUrl = new URL(RESET_PASSWORD_PATH, config.publicUrl ?? `http://localhost:${config.port}`);
      const reset = await createResetLink(await database(), { email, resetUrl });
      if (!reset) throw new DomainError('not_found', 'email', `no user with the email ${email.trim()}`);
      output.print(reset, [
        `a link for ${reset.email} to set a new password (it works once, within ${RESET_LINK_HOURS} hour):`,
        reset.link,
      ]);
    },
  },
];
