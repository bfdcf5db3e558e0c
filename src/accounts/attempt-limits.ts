import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { DomainError } from '../errors.ts';

/** Tries counted per email (lower-cased) and per client address over a sliding window. */
export type AttemptTable = 'login_attempts' | 'password_reset_requests';

/**
 * Records a try, unless the email or the address has reached its limit within the window: then
 * `refused()` is thrown and nothing is recorded. Transaction-scoped locks on the email and on the
 * address serialise the count and the insert, so a burst of concurrent tries cannot all read the
 * count before any is written.
 */
export async function reserveAttempt(
  db: Db,
  input: {
    table: AttemptTable;
    email: string;
    ip: string;
    windowMinutes: number;
    maxPerEmail: number;
    maxPerIp: number;
    refused: () => DomainError;
  },
): Promise<void> {
  const { table, email, ip, windowMinutes } = input;
  await db.transaction().execute(async (tx) => {
    // Always the email's lock first, then the address's: two tries never wait on each other in a cycle.
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`${table} email ${email}`}, 0))`.execute(tx);
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`${table} ip ${ip}`}, 0))`.execute(tx);
    const recent = await tx
      .selectFrom(table)
      .select([
        sql<number>`count(*) FILTER (WHERE email = ${email})::int`.as('forEmail'),
        sql<number>`count(*) FILTER (WHERE ip = ${ip})::int`.as('forIp'),
      ])
      .where('attempted_at', '>', sql<Date>`now() - make_interval(mins => ${windowMinutes})`)
      .where((eb) => eb.or([eb('email', '=', email), eb('ip', '=', ip)]))
      .executeTakeFirstOrThrow();
    if (recent.forEmail >= input.maxPerEmail || recent.forIp >= input.maxPerIp) throw input.refused();
    await tx.insertInto(table).values({ email, ip }).execute();
  });
}
