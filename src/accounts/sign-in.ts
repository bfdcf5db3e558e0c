import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { DomainError } from '../errors.ts';
import { reserveAttempt } from './attempt-limits.ts';
import { hashPassword, verifyPassword } from './passwords.ts';

const LOGIN_WINDOW_MINUTES = 15;
export const MAX_FAILED_LOGINS_PER_EMAIL = 5;
export const MAX_FAILED_LOGINS_PER_IP = 30;

/** Too many failed sign-ins for this email or from this address in the last minutes. */
function loginThrottled(): DomainError {
  return new DomainError(
    'refused',
    'email',
    `Too many failed sign-ins. Try again in ${LOGIN_WINDOW_MINUTES} minutes.`,
    { status: 429 },
  );
}

/**
 * The user's id when the email and password match. Failures are counted per email and per client
 * address; past either limit every try is refused, right or wrong, until the window has passed.
 */
export async function verifyLogin(
  db: Db,
  input: { email: string; password: string; ip: string },
): Promise<string | undefined> {
  const email = input.email.trim().toLowerCase();
  // Counted as a failure before the (slow) password check; a successful sign-in removes the email's failures, this one
  // included.
  await reserveAttempt(db, {
    table: 'login_attempts',
    email,
    ip: input.ip,
    windowMinutes: LOGIN_WINDOW_MINUTES,
    maxPerEmail: MAX_FAILED_LOGINS_PER_EMAIL,
    maxPerIp: MAX_FAILED_LOGINS_PER_IP,
    refused: loginThrottled,
  });
  const user = await db
    .selectFrom('users')
    .select(['id', 'password_hash'])
    .where(sql<string>`lower(email)`, '=', email)
    .executeTakeFirst();
  // An unknown email costs the same hashing as a wrong password, so timing does not tell them apart.
  const matches = await verifyPassword(input.password, user?.password_hash ?? (await unknownUserHash()));
  if (user && matches) {
    await db.updateTable('users').set({ last_login_at: sql<Date>`now()` }).where('id', '=', user.id).execute();
    await db.deleteFrom('login_attempts').where('email', '=', email).execute();
    return user.id;
  }
  await db.deleteFrom('login_attempts').where('attempted_at', '<', sql<Date>`now() - interval '1 day'`).execute();
  return undefined;
}

let unknownUserHashPromise: Promise<string> | undefined;
function unknownUserHash(): Promise<string> {
  unknownUserHashPromise ??= hashPassword(randomBytes(16).toString('hex'));
  return unknownUserHashPromise;
}
