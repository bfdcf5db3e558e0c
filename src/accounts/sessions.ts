import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { UserRole } from '../db/schema.ts';
import { reviewWaitingCount } from '../meters/review.ts';
import { hashToken, randomToken } from './tokens.ts';

const SESSION_DAYS = 14;

export interface SessionUser {
  sessionId: string;
  userId: string;
  accountId: string;
  email: string;
  role: UserRole;
  accountName: string;
  csrfToken: string;
  /** The account's trial waits for this user to follow the link mailed at sign-up. */
  awaitingVerification: boolean;
  /**
   * The account's submissions waiting in the review queue, up to REVIEW_COUNT_LIMIT: the navigation shows the count.
   */
  reviewWaiting: number;
}

/**
 * The token goes into the cookie and is never stored; the session row keeps its SHA-256.
 * The user's expired sessions are removed on the way.
 */
export async function createSession(db: Db, userId: string): Promise<{ token: string; expiresAt: Date }> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).where('expires_at', '<=', sql<Date>`now()`).execute();
  const token = randomToken();
  const row = await db
    .insertInto('sessions')
    .values({
      token_sha256: hashToken(token),
      user_id: userId,
      csrf_token: randomToken(),
      expires_at: sql<Date>`now() + make_interval(days => ${SESSION_DAYS})`,
    })
    .returning('expires_at')
    .executeTakeFirstOrThrow();
  return { token, expiresAt: row.expires_at };
}

/** The signed-in user behind a cookie's token, if the session exists and has not expired. */
export async function findSession(db: Db, token: string): Promise<SessionUser | undefined> {
  const row = await db
    .selectFrom('sessions as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .innerJoin('accounts as a', 'a.id', 'u.account_id')
    .select([
      's.id as sessionId',
      'u.id as userId',
      'u.account_id as accountId',
      'u.email',
      'u.role',
      'a.name as accountName',
      's.csrf_token as csrfToken',
      sql<boolean>`u.email_verified_at IS NULL AND a.trial_plan_code IS NOT NULL`.as('awaitingVerification'),
      reviewWaitingCount(sql.ref('u.account_id')).as('reviewWaiting'),
      's.last_seen_at',
    ])
    .where('s.token_sha256', '=', hashToken(token))
    .where('s.expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
  if (!row) return undefined;
  const { last_seen_at: lastSeenAt, ...session } = row;
  if (Date.now() - lastSeenAt.getTime() > 60_000) {
    await db.updateTable('sessions').set({ last_seen_at: sql<Date>`now()` }).where('id', '=', row.sessionId).execute();
  }
  return session;
}

export async function deleteSession(db: Db, sessionId: string): Promise<void> {
  await db.deleteFrom('sessions').where('id', '=', sessionId).execute();
}
