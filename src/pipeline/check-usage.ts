import { sql } from 'kysely';
import type { Db, Tx } from '../db/database.ts';
import { ApiError } from '../errors.ts';
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
    .where('month', '=', sql<Date>`${usageMonth()}::date`)
    .executeTakeFirst();
  return usage?.request_count ?? 0;
}

/**
 * Step 3: a quick look (at the usage `authenticate` loaded) before the upload is read, so a client at its limit is told at once.
 * The count that decides is `reserveUsage`, inside the transaction that accepts the submission.
 */
export function checkUsage(monthlyUsage: number, plan: ActivePlan): void {
  if (monthlyUsage >= plan.monthlyRequestLimit) throw usageLimitReached(plan);
}

/**
 * Counts one accepted submission, unless that would pass the limit. The row lock taken by the
 * upsert serialises concurrent submissions of one account, so the limit holds exactly.
 */
export async function reserveUsage(tx: Tx, accountId: string, plan: ActivePlan): Promise<void> {
  if (plan.monthlyRequestLimit <= 0) throw usageLimitReached(plan);
  const counted = await tx
    .insertInto('api_usage')
    .values({ account_id: accountId, month: usageMonth(), request_count: 1 })
    .onConflict((conflict) =>
      conflict
        .columns(['account_id', 'month'])
        .doUpdateSet({ request_count: sql`api_usage.request_count + 1` })
        .where('api_usage.request_count', '<', plan.monthlyRequestLimit),
    )
    .returning('request_count')
    .executeTakeFirst();
  if (!counted) throw usageLimitReached(plan);
}

function usageLimitReached(plan: ActivePlan): ApiError {
  return new ApiError(
    422,
    'usage',
    `Monthly request limit of ${plan.monthlyRequestLimit} reached for ${usageMonth().slice(0, 7)} (plan ${plan.planCode})`,
  );
}
