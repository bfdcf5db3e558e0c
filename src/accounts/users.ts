import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { DomainError } from '../errors.ts';
import { hashPassword, requirePassword } from './passwords.ts';
import { requireAccount } from './require-account.ts';

const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** A user for an existing account (the operator CLI). */
export async function createUser(db: Db, input: { accountId: string | number; email: string; password: string }): Promise<{ id: string }> {
  const accountId = await requireAccount(db, input.accountId);
  const email = requireEmail(input.email);
  const passwordHash = await hashPassword(requirePassword(input.password));
  return insertUser(db, { accountId, email, passwordHash });
}

export async function insertUser(db: Db, input: { accountId: string; email: string; passwordHash: string }): Promise<{ id: string }> {
  const row = await db
    .insertInto('users')
    .values({ account_id: input.accountId, email: input.email, password_hash: input.passwordHash })
    .onConflict((conflict) => conflict.expression(sql`lower(email)`).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!row) throw new DomainError('invalid', 'email', `a user with the email ${input.email} already exists`);
  return row;
}

export function requireEmail(value: string): string {
  const email = value.trim();
  if (!EMAIL_PATTERN.test(email) || email.length > 254) throw new DomainError('invalid', 'email', `"${email}" is not an email address`);
  return email;
}
