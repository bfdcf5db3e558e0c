import type { Db } from '../db/database.ts';
import { createAccount } from './accounts.ts';
import { requireText } from '../errors.ts';
import { hashPassword, requirePassword } from './passwords.ts';
import { insertUser, requireEmail } from './users.ts';

/** Self sign-up: a new account on `planCode` for one month and its first user, all or nothing. */
export async function signUp(
  db: Db,
  input: { accountName: string; email: string; password: string; planCode: string },
): Promise<{ accountId: string; userId: string }> {
  const accountName = requireText(input.accountName, 'organisation name');
  const email = requireEmail(input.email);
  const passwordHash = await hashPassword(requirePassword(input.password));
  return db.transaction().execute(async (tx) => {
    const account = await createAccount(tx, { name: accountName, planCode: input.planCode });
    const user = await insertUser(tx, { accountId: account.id, email, passwordHash });
    return { accountId: account.id, userId: user.id };
  });
}
