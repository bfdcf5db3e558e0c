import { sql } from 'kysely';
import type { Db, Tx } from '../db/database.ts';
import type { UserRole } from '../db/schema.ts';
import { DomainError, requireId } from '../errors.ts';
import { hashPassword, requirePassword } from './passwords.ts';
import { requireAccount } from './require-account.ts';

const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export interface UserSummary {
  id: string;
  accountId: string;
  email: string;
  role: UserRole;
  createdAt: Date;
  lastLoginAt: Date | null;
}

/** A user for an existing account (the operator CLI): an owner, as the account's first user is. */
export async function createUser(
  db: Db,
  input: { accountId: string | number; email: string; password: string },
): Promise<{ id: string }> {
  const accountId = await requireAccount(db, input.accountId);
  const email = requireEmail(input.email);
  const passwordHash = await hashPassword(requirePassword(input.password));
  return insertUser(db, { accountId, email, passwordHash, role: 'owner' });
}

export async function insertUser(
  db: Db,
  input: { accountId: string; email: string; passwordHash: string; role: UserRole },
): Promise<{ id: string }> {
  const row = await db
    .insertInto('users')
    .values({ account_id: input.accountId, email: input.email, password_hash: input.passwordHash, role: input.role })
    .onConflict((conflict) => conflict.expression(sql`lower(email)`).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!row) throw new DomainError('invalid', 'email', `a user with the email ${input.email} already exists`);
  return row;
}

/** One account's users (the team page), or every account's (`meterlens users list`), oldest first. */
export async function listUsers(db: Db, accountId: string | undefined): Promise<UserSummary[]> {
  return db
    .selectFrom('users')
    .select([
      'id',
      'account_id as accountId',
      'email',
      'role',
      'created_at as createdAt',
      'last_login_at as lastLoginAt',
    ])
    .$if(accountId !== undefined, (query) => query.where('account_id', '=', requireId(accountId!, 'account id')))
    .orderBy('id')
    .execute();
}

/** The user with this email, whatever its case. */
export async function findUserByEmail(
  db: Db | Tx,
  email: string,
): Promise<{ id: string; accountId: string; email: string } | undefined> {
  return db
    .selectFrom('users')
    .select(['id', 'account_id as accountId', 'email'])
    .where(sql<string>`lower(email)`, '=', email.trim().toLowerCase())
    .executeTakeFirst();
}

/**
 * A new password ends every session of the user, on every browser (the one that set it then signs
 * in afresh), and every reset link still open: whoever knew the old password, or held a link or a
 * cookie, is out.
 */
export async function changePassword(tx: Tx, userId: string, passwordHash: string): Promise<void> {
  await tx.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId).execute();
  await tx.deleteFrom('sessions').where('user_id', '=', userId).execute();
  await tx
    .updateTable('password_resets')
    .set({ used_at: sql<Date>`now()` })
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .execute();
}

export function requireEmail(value: string): string {
  const email = value.trim();
  if (!EMAIL_PATTERN.test(email) || email.length > 254)
    throw new DomainError('invalid', 'email', `"${email}" is not an email address`);
  return email;
}
