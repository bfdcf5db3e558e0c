import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { DomainError, requireText } from '../errors.ts';
import { createAccount } from './accounts.ts';
import { hashPassword, requirePassword } from './passwords.ts';
import { insertUser, requireEmail } from './users.ts';

const SIGNUP_WINDOW_MINUTES = 60;
export const MAX_SIGNUPS_PER_IP = 5;

/**
 * Self sign-up: a new account and its first user, all or nothing. The account gets `planCode` for
 * one month at once, or, with `awaitVerification`, once the user's email is verified. Sign-ups
 * are limited per client address.
 */
export async function signUp(
  db: Db,
  input: {
    accountName: string;
    email: string;
    password: string;
    planCode: string;
    awaitVerification: boolean;
    ip: string;
  },
): Promise<{ accountId: string; userId: string }> {
  const accountName = requireText(input.accountName, 'organisation name');
  const email = requireEmail(input.email);
  const password = requirePassword(input.password);
  await reserveSignUp(db, input.ip);
  const passwordHash = await hashPassword(password);
  return db.transaction().execute(async (tx) => {
    const account = await createAccount(tx, {
      name: accountName,
      ...(input.awaitVerification ? { trialPlanCode: input.planCode } : { planCode: input.planCode }),
    });
    const user = await insertUser(tx, { accountId: account.id, email, passwordHash, role: 'owner' });
    return { accountId: account.id, userId: user.id };
  });
}

/**
 * Counts this sign-up against the address before the (slow) password hashing, unless the address
 * is at its limit. A transaction-scoped lock on the address serialises the count and the insert,
 * so a burst of concurrent sign-ups cannot all read the count before any is written. A sign-up
 * that then fails (an email already taken) still counts: it cost a hash, and it tells whether
 * an email has an account.
 */
async function reserveSignUp(db: Db, ip: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`signup ip ${ip}`}, 0))`.execute(tx);
    const recent = await tx
      .selectFrom('signup_attempts')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('ip', '=', ip)
      .where('attempted_at', '>', sql<Date>`now() - make_interval(mins => ${SIGNUP_WINDOW_MINUTES})`)
      .executeTakeFirstOrThrow();
    if (recent.n >= MAX_SIGNUPS_PER_IP) {
      throw new DomainError(
        'refused',
        'signup',
        `Too many sign-ups from your address. Try again in ${SIGNUP_WINDOW_MINUTES} minutes.`,
        { status: 429 },
      );
    }
    await tx.insertInto('signup_attempts').values({ ip }).execute();
    await tx
      .deleteFrom('signup_attempts')
      .where('attempted_at', '<', sql<Date>`now() - make_interval(mins => ${SIGNUP_WINDOW_MINUTES})`)
      .execute();
  });
}
