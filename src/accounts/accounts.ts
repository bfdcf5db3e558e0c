import type { Db } from '../db/database.ts';
import { DomainError, requireId, requireText } from '../errors.ts';
import { setSubscription, type Subscription } from './subscriptions.ts';

export interface Account {
  id: string;
  name: string;
  createdAt: Date;
  /** Present when the account was created with a plan. */
  subscription?: Subscription;
}

/** With a plan, the account starts with an active one-month subscription; both or neither are stored. */
export async function createAccount(db: Db, input: { name: string; planCode?: string }): Promise<Account> {
  const name = requireText(input.name, 'account name');
  return db.transaction().execute(async (tx) => {
    const row = await tx.insertInto('accounts').values({ name }).returningAll().executeTakeFirstOrThrow();
    const account: Account = { id: row.id, name: row.name, createdAt: row.created_at };
    if (input.planCode !== undefined) {
      account.subscription = await setSubscription(tx, { accountId: row.id, planCode: input.planCode, months: 1 });
    }
    return account;
  });
}

/** Returns the validated id of an existing account; throws a not_found DomainError otherwise. */
export async function requireAccount(db: Db, accountId: string | number): Promise<string> {
  const id = requireId(accountId, 'account id');
  const row = await db.selectFrom('accounts').select('id').where('id', '=', id).executeTakeFirst();
  if (!row) throw new DomainError('not_found', 'account id', `no account with id ${id}`);
  return id;
}
