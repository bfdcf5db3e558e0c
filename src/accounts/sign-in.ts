import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { DomainError } from '../errors.ts';
import { hashPassword, verifyPassword } from './passwords.ts';

const LOGIN_WINDOW_MINUTES = 15;
export const MAX_FAILED_LOGINS_PER_EMAIL = 5;
export const MAX_FAILED_LOGINS_PER_IP = 30;

/** Too many failed sign-ins for this email or from this address in the last minutes. */
function loginThrottled(): DomainError {
  return new DomainError('refused', 'email', `Too many failed sign-ins. Try again in ${LOGIN_WINDOW_MINUTES} minutes.`, { status: 429 });
}

/**
 * The user's id when the email and password match. Failures are counted per email and per client
 * address; past either limit every try is refused, right or wrong, until the window has passed.
 */
export async function verifyLogin(db: Db, input: { email: string; password: string; ip: string }): Promise<string | undefined> {
  const email = input.email.trim().toLowerCase();
  await reserveLoginAttempt(db, email, input.ip);
  const user = await db.selectFrom('users').select(['id', 'password_hash']).where(sql<string>`lower(email)`, '=', email).executeTakeFirst();
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

/**
 * Records this try as a failure before the (slow) password check, unless the email or the address
 * is already at its limit. Transaction-scoped locks on the email and on the address serialise the
 * count and the insert, so a burst of concurrent tries cannot all read the count before any is
 * written. A successful sign-in removes the email's failures, this one included.
 */
async function reserveLoginAttempt(db: Db, email: string, ip: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    // Always the email's lock first, then the address's: two tries never wait on each other in a cycle.
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`login email ${email}`}, 0))`.execute(tx);
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`login ip ${ip}`}, 0))`.execute(tx);
    const failures = await tx
      .selectFrom('login_attempts')
      .select([sql<number>`count(*) FILTER (WHERE email = ${email})::int`.as('forEmail'), sql<number>`count(*) FILTER (WHERE ip = ${ip})::int`.as('forIp')])
      .where('attempted_at', '>', sql<Date>`now() - make_interval(mins => ${LOGIN_WINDOW_MINUTES})`)
      .where((eb) => eb.or([eb('email', '=', email), eb('ip', '=', ip)]))
      .executeTakeFirstOrThrow();
    if (failures.forEmail >= MAX_FAILED_LOGINS_PER_EMAIL || failures.forIp >= MAX_FAILED_LOGINS_PER_IP) {
      throw loginThrottled();
    }
    await tx.insertInto('login_attempts').values({ email, ip }).execute();
  });
}

let unknownUserHashPromise: Promise<string> | undefined;
function unknownUserHash(): Promise<string> {
  unknownUserHashPromise ??= hashPassword(randomBytes(16).toString('hex'));
  return unknownUserHashPromise;
}
