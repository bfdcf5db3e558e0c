import { sql } from 'kysely';
import { subscriptionState, type SubscriptionState } from '../accounts/subscription-state.ts';
import type { Db } from '../db/database.ts';
import { monthlyUsage } from '../pipeline/check-usage.ts';

export const USAGE_CHART_DAYS = 30;

export interface AccountUsage {
  /** Accepted submissions this calendar month (UTC): the count the API's limit applies to. */
  monthCount: number;
  plan: { name: string; monthlyRequestLimit: number; state: SubscriptionState; periodEnd: Date } | undefined;
  /** Submissions per UTC day, oldest first, the last USAGE_CHART_DAYS days including today. */
  daily: Array<{ day: string; count: number }>;
}

export async function accountUsage(db: Db, accountId: string): Promise<AccountUsage> {
  const [monthCount, plan, daily] = await Promise.all([
    monthlyUsage(db, accountId),
    db
      .selectFrom('subscriptions as s')
      .innerJoin('plans as p', 'p.code', 's.plan_code')
      .select([
        'p.name',
        'p.monthly_request_limit as monthlyRequestLimit',
        subscriptionState('s').as('state'),
        's.period_end as periodEnd',
      ])
      .where('s.account_id', '=', accountId)
      .executeTakeFirst(),
    sql<{ day: string; count: number }>`
      SELECT days.day::date::text AS day, count(m.id)::int AS count
      FROM generate_series(
             (now() AT TIME ZONE 'UTC')::date - ${USAGE_CHART_DAYS - 1}::int,
             (now() AT TIME ZONE 'UTC')::date,
             interval '1 day') AS days (day)
      LEFT JOIN submissions m
        ON m.account_id = ${accountId}
       AND m.mode <> 'manual' -- readings people entered are not usage
       AND m.created_at >= days.day AT TIME ZONE 'UTC'
       AND m.created_at < (days.day + interval '1 day') AT TIME ZONE 'UTC'
      GROUP BY days.day
      ORDER BY days.day`.execute(db),
  ]);
  return {
    monthCount,
    plan,
    daily: daily.rows,
  };
}
