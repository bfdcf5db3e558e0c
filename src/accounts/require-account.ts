import type { Db } from '../db/database.ts';
import { DomainError, requireId } from '../errors.ts';

/** Returns the validated id of an existing account; throws a not_found DomainError otherwise. */
export async function requireAccount(db: Db, accountId: string | number): Promise<string> {
  const id = requireId(accountId, 'account id');
  const row = await db.selectFrom('accounts').select('id').where('id', '=', id).executeTakeFirst();
  if (!row) throw new DomainError('not_found', 'account id', `no account with id ${id}`);
  return id;
}
