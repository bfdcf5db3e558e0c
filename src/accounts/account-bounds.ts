import type { Tx } from '../db/database.ts';
import { DomainError } from '../errors.ts';

/**
 * Calls that count no usage (naming a meter, correcting a reading, creating an API key) would let
 * a script fill the database. Each kind of row they create has a bound per account or per
 * submission, far above real use so that only a runaway client reaches it; docs/api.md ("Errors") and
 * docs/dashboard.md ("API Keys") state them.
 */

/**
 * Locks the account's row until `tx` ends, so that concurrent creations in one account are
 * counted one after another and a bound holds exactly. NO KEY UPDATE: an insert that only refers
 * to the account (a submission, a webhook delivery) does not wait for it.
 */
export async function lockAccount(tx: Tx, accountId: string): Promise<void> {
  await tx.selectFrom('accounts').select('id').where('id', '=', accountId).forNoKeyUpdate().execute();
}

/** Refuses (API: 422, `field` naming what is full) a creation once `count` has reached `bound`. */
export function checkBound(count: number, bound: number, field: string, message: string): void {
  if (count >= bound) throw new DomainError('refused', field, message);
}
