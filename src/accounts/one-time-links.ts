import { sql } from 'kysely';
import type { Db, Tx } from '../db/database.ts';
import { DomainError } from '../errors.ts';
import { hashToken } from './tokens.ts';

/**
 * The links mailed or shown once (verify an email, join an account, set a new password): each row
 * holds the SHA-256 of the link's random token and works once (used_at), until expires_at.
 */
export type LinkTable = 'email_verifications' | 'invitations' | 'password_resets';

/** What a link of one kind says when it is refused: it names what to do instead. */
export interface LinkRefusals {
  invalid: string;
  used: string;
  expired: string;
}

/** For the row's expires_at. */
export function expiresIn(hours: number) {
  return sql<Date>`now() + make_interval(hours => ${hours})`;
}

/** `page` with the token as its `token` parameter. */
export function linkWithToken(page: URL, token: string): string {
  const link = new URL(page);
  link.searchParams.set('token', token);
  return link.href;
}

/**
 * The id of the row a link's token opens; refused with 400 for a token no link has and 410 Gone
 * for one used or expired. Inside a transaction, `lock` keeps the row locked until it ends, so a
 * link followed twice at once works once.
 */
export async function openLink(
  db: Db | Tx,
  table: LinkTable,
  token: string,
  refusals: LinkRefusals,
  lock = false,
): Promise<string> {
  const link = await db
    .selectFrom(table)
    .select(['id', 'used_at', sql<boolean>`expires_at <= now()`.as('expired')])
    .where('token_sha256', '=', hashToken(token))
    .$if(lock, (query) => query.forUpdate())
    .executeTakeFirst();
  if (!link) throw new DomainError('invalid', 'token', refusals.invalid);
  if (link.used_at) throw linkRefused(refusals.used);
  if (link.expired) throw linkRefused(refusals.expired);
  return link.id;
}

/** Opens the link (locked) and marks it used, in the caller's transaction. */
export async function useLink(tx: Tx, table: LinkTable, token: string, refusals: LinkRefusals): Promise<string> {
  const id = await openLink(tx, table, token, refusals, true);
  await tx.updateTable(table).set({ used_at: sql<Date>`now()` }).where('id', '=', id).execute();
  return id;
}

/** 410 Gone: the link existed but works no more. */
function linkRefused(message: string): DomainError {
  return new DomainError('refused', 'token', message, { status: 410 });
}
