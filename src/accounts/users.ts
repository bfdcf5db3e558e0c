import { createHash, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { requireAccount } from './accounts.ts';
import { InvalidInputError, requireText } from './errors.ts';
import { setSubscription } from './subscriptions.ts';

export const MIN_PASSWORD_LENGTH = 10;
const MAX_PASSWORD_LENGTH = 256;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** scrypt with N = 2^15, r = 8, p = 1: 32 MiB and some 50–100 ms per hash on one core. */
const SCRYPT = { log2N: 15, r: 8, p: 1, keyLength: 32 };
const SESSION_DAYS = 14;
const LOGIN_WINDOW_MINUTES = 15;
export const MAX_FAILED_LOGINS_PER_EMAIL = 5;
export const MAX_FAILED_LOGINS_PER_IP = 30;

export interface SessionUser {
  sessionId: string;
  userId: string;
  accountId: string;
  email: string;
  accountName: string;
  csrfToken: string;
}

/** Too many failed sign-ins for this email or from this address in the last minutes. */
export class LoginThrottledError extends Error {
  constructor() {
    super(`Too many failed sign-ins. Try again in ${LOGIN_WINDOW_MINUTES} minutes.`);
    this.name = 'LoginThrottledError';
  }
}

/** A user for an existing account (the operator CLI). */
export async function createUser(db: Db, input: { accountId: string | number; email: string; password: string }): Promise<{ id: string }> {
  const accountId = await requireAccount(db, input.accountId);
  const email = requireEmail(input.email);
  const passwordHash = await hashPassword(requirePassword(input.password));
  return insertUser(db, { accountId, email, passwordHash });
}

/** Self sign-up: a new account on `planCode` for one month and its first user, all or nothing. */
export async function signUp(
  db: Db,
  input: { accountName: string; email: string; password: string; planCode: string },
): Promise<{ accountId: string; userId: string }> {
  const accountName = requireText(input.accountName, 'organisation name');
  const email = requireEmail(input.email);
  const passwordHash = await hashPassword(requirePassword(input.password));
  return db.transaction().execute(async (tx) => {
    const account = await tx.insertInto('accounts').values({ name: accountName }).returning('id').executeTakeFirstOrThrow();
    await setSubscription(tx, { accountId: account.id, planCode: input.planCode, months: 1 });
    const user = await insertUser(tx, { accountId: account.id, email, passwordHash });
    return { accountId: account.id, userId: user.id };
  });
}

/**
 * The user's id when the email and password match. Failures are counted per email and per client
 * address; past either limit every try is refused, right or wrong, until the window has passed.
 */
export async function verifyLogin(db: Db, input: { email: string; password: string; ip: string }): Promise<string | undefined> {
  const email = input.email.trim().toLowerCase();
  await reserveLoginAttempt(db, email, input.ip);
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
      .select([
        sql<number>`count(*) FILTER (WHERE email = ${email})::int`.as('forEmail'),
        sql<number>`count(*) FILTER (WHERE ip = ${ip})::int`.as('forIp'),
      ])
      .where('attempted_at', '>', sql<Date>`now() - make_interval(mins => ${LOGIN_WINDOW_MINUTES})`)
      .where((eb) => eb.or([eb('email', '=', email), eb('ip', '=', ip)]))
      .executeTakeFirstOrThrow();
    if (failures.forEmail >= MAX_FAILED_LOGINS_PER_EMAIL || failures.forIp >= MAX_FAILED_LOGINS_PER_IP) {
      throw new LoginThrottledError();
    }
    await tx.insertInto('login_attempts').values({ email, ip }).execute();
  });
}

/**
 * The token goes into the cookie and is never stored; the session row keeps its SHA-256.
 * The user's expired sessions are removed on the way.
 */
export async function createSession(db: Db, userId: string): Promise<{ token: string; expiresAt: Date }> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).where('expires_at', '<=', sql<Date>`now()`).execute();
  const token = randomBytes(32).toString('base64url');
  const row = await db
    .insertInto('sessions')
    .values({
      token_sha256: sha256(token),
      user_id: userId,
      csrf_token: randomBytes(32).toString('base64url'),
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
    .select(['s.id as sessionId', 'u.id as userId', 'u.account_id as accountId', 'u.email', 'a.name as accountName', 's.csrf_token as csrfToken', 's.last_seen_at'])
    .where('s.token_sha256', '=', sha256(token))
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

/** For `meterlens users create` without --password: printed once, stored only as a hash. */
export function generatePassword(): string {
  return randomBytes(15).toString('base64url');
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password, salt, SCRYPT);
  return ['scrypt', SCRYPT.log2N, SCRYPT.r, SCRYPT.p, salt.toString('base64'), hash.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, log2N, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64'), {
    log2N: Number(log2N),
    r: Number(r),
    p: Number(p),
    keyLength: expected.length,
  });
  return timingSafeEqual(actual, expected);
}

let unknownUserHashPromise: Promise<string> | undefined;
function unknownUserHash(): Promise<string> {
  unknownUserHashPromise ??= hashPassword(randomBytes(16).toString('hex'));
  return unknownUserHashPromise;
}

function scryptAsync(password: string, salt: Buffer, params: typeof SCRYPT): Promise<Buffer> {
  const N = 2 ** params.log2N;
  const options: ScryptOptions = { N, r: params.r, p: params.p, maxmem: 256 * N * params.r };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, params.keyLength, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

async function insertUser(db: Db, input: { accountId: string; email: string; passwordHash: string }): Promise<{ id: string }> {
  const row = await db
    .insertInto('users')
    .values({ account_id: input.accountId, email: input.email, password_hash: input.passwordHash })
    .onConflict((conflict) => conflict.expression(sql`lower(email)`).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!row) throw new InvalidInputError(`a user with the email ${input.email} already exists`);
  return row;
}

function requireEmail(value: string): string {
  const email = value.trim();
  if (!EMAIL_PATTERN.test(email) || email.length > 254) throw new InvalidInputError(`"${email}" is not an email address`);
  return email;
}

function requirePassword(password: string): string {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new InvalidInputError(`the password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw new InvalidInputError(`the password must have at most ${MAX_PASSWORD_LENGTH} characters`);
  }
  return password;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
