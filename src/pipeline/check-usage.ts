import { sql } from 'kysely';
import type { PgBoss } from 'pg-boss';
import type { Db, Tx } from '../db/database.ts';
import { DomainError } from '../errors.ts';
import { usageRefusals } from '../metrics.ts';
import { queueAccountEvent } from '../webhooks/deliver.ts';
import { USAGE_THRESHOLD_SHARE } from '../webhooks/events.ts';
import type { ReadFailureCode } from '../readers/chain.ts';
import type { ActivePlan } from './check-subscription.ts';

/** First day of the current calendar month in UTC, as 'YYYY-MM-01'. */
export function usageMonth(now = new Date()): string {
  return `${now.toISOString().slice(0, 7)}-01`;
}

/** Accepted submissions this calendar month (UTC): the count the plan's limit applies to. */
export async function monthlyUsage(db: Db, accountId: string): Promise<number> {
  const usage = await db
    .selectFrom('api_usage')
    .select('request_count')
    .where('account_id', '=', accountId)
    .where('month', '=', sql<string>`${usageMonth()}::date`)
    .executeTakeFirst();
  return usage?.request_count ?? 0;
}

/**
 * Step 3: a quick look (at the usage `authenticate` loaded) before the upload is read, so a client at its limit is told
 * at once. `mayBeRetry` is asked only when the limit is reached: a request it lets through is answered from an
 * earlier request's stored response, which needs no quota, or refused before anything is stored.
 * The count that decides is `reserveUsage`, inside the transaction that accepts the submission.
 */
export async function checkUsage(
  monthlyUsage: number,
  plan: ActivePlan,
  mayBeRetry: () => Promise<boolean> = async () => false,
): Promise<void> {
  if (monthlyUsage >= plan.monthlyRequestLimit && !(await mayBeRetry())) throw usageLimitReached(plan);
}

/**
 * The failures a submission stays counted for: a verdict on its photo. Any other (no reader could be reached, not read
 * in time, a crashed or failed process) is the service's own, and recordFailure gives its count back, so that the
 * client's retry is counted once.
 */
export const COUNTED_FAILURES: readonly string[] = ['unreadable', 'invalid_image'] satisfies ReadFailureCode[];

/**
 * Counts one accepted submission, unless that would pass the limit; returns the month it was
 * counted in: the month (UTC) of the transaction's clock, and so of the submission's created_at
 * (usageMonth of it). The row lock taken by the upsert serialises concurrent submissions of
 * one account, so the limit holds exactly, and so does the once-a-month announcement of each usage
 * milestone.
 */
export async function reserveUsage(tx: Tx, boss: PgBoss, accountId: string, plan: ActivePlan): Promise<string> {
  if (plan.monthlyRequestLimit <= 0) throw usageLimitReached(plan);
  const counted = await tx
    .insertInto('api_usage')
    .values({
      account_id: accountId,
      month: sql<string>`date_trunc('month', now() AT TIME ZONE 'UTC')::date`,
      request_count: 1,
    })
    .onConflict((conflict) =>
      conflict
        .columns(['account_id', 'month'])
        .doUpdateSet({ request_count: sql`api_usage.request_count + 1` })
        .where('api_usage.request_count', '<', plan.monthlyRequestLimit),
    )
    .returning(['month', 'request_count', 'threshold_reached_at', 'limit_reached_at'])
    .executeTakeFirst();
  if (!counted) throw usageLimitReached(plan);
  await announceUsageMilestone(tx, boss, { accountId, month: counted.month }, plan, counted);
  return counted.month;
}

/**
 * Takes back one count reserveUsage made in `month`, for a submission withdrawn before it was read
 * (withdrawSubmission) or failed on the service's side (recordFailure). A milestone it announced
 * stays announced: each is sent once a month.
 */
export async function releaseUsage(tx: Tx, accountId: string, month: string): Promise<void> {
  await tx
    .updateTable('api_usage')
    .set({ request_count: sql`request_count - 1` })
    .where('account_id', '=', accountId)
    .where('month', '=', sql<string>`${month}::date`)
    .where('request_count', '>', 0)
    .execute();
}

/**
 * The first count this month at or past 80% of the limit sends `usage.threshold_reached`, the
 * first at the limit `usage.limit_reached`. The row is still locked by reserveUsage's upsert, so
 * of concurrent submissions only one sees a milestone unmarked; it marks it and announces it.
 */
async function announceUsageMilestone(
  tx: Tx,
  boss: PgBoss,
  { accountId, month }: { accountId: string; month: string },
  plan: ActivePlan,
  usage: { request_count: number; threshold_reached_at: Date | null; limit_reached_at: Date | null },
): Promise<void> {
  const limit = plan.monthlyRequestLimit;
  const count = usage.request_count;
  const reachedLimit = count >= limit && !usage.limit_reached_at;
  const reachedThreshold = count >= Math.ceil(limit * USAGE_THRESHOLD_SHARE) && !usage.threshold_reached_at;
  if (!reachedLimit && !reachedThreshold) return;
  // Reaching the limit also passes the threshold: both are marked, only the limit is announced.
  await tx
    .updateTable('api_usage')
    .set({
      threshold_reached_at: sql<Date>`coalesce(threshold_reached_at, now())`,
      ...(reachedLimit && { limit_reached_at: sql<Date>`now()` }),
    })
    .where('account_id', '=', accountId)
    .where('month', '=', sql<string>`${month}::date`)
    .execute();
  await queueAccountEvent(tx, boss, {
    accountId,
    type: reachedLimit ? 'usage.limit_reached' : 'usage.threshold_reached',
    data: { month: month.slice(0, 7), count, limit, plan: plan.planCode },
  });
}

function usageLimitReached(plan: ActivePlan): DomainError {
  usageRefusals.inc({ plan: plan.planCode });
  return new DomainError(
    'refused',
    'usage',
    `Monthly request limit of ${plan.monthlyRequestLimit} reached for ${usageMonth().slice(0, 7)} (plan ${plan.planCode})`,
  );
}
