import type { Db } from '../db/database.ts';
import { DomainError, requireText } from '../errors.ts';

export interface Plan {
  code: string;
  name: string;
  monthlyRequestLimit: number;
  createdAt: Date;
}

const PLAN_CODE_PATTERN = /^[a-z0-9][a-z0-9_-]*$/;

export async function createPlan(
  db: Db,
  input: { code: string; name: string; monthlyRequestLimit: number },
): Promise<Plan> {
  const code = input.code.trim();
  if (!PLAN_CODE_PATTERN.test(code)) {
    throw new DomainError(
      'invalid',
      'plan code',
      `plan code must be lowercase letters, digits, "-" or "_", got "${input.code}"`,
    );
  }
  if (!Number.isInteger(input.monthlyRequestLimit) || input.monthlyRequestLimit < 0) {
    throw new DomainError(
      'invalid',
      'monthly request limit',
      `monthly request limit must be a non-negative integer, got ${input.monthlyRequestLimit}`,
    );
  }
  const row = await db
    .insertInto('plans')
    .values({ code, name: requireText(input.name, 'plan name'), monthly_request_limit: input.monthlyRequestLimit })
    .onConflict((conflict) => conflict.column('code').doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new DomainError('invalid', 'plan code', `plan "${code}" already exists`);
  return toPlan(row);
}

/** Smallest plan first. */
export async function listPlans(db: Db): Promise<Plan[]> {
  const rows = await db.selectFrom('plans').selectAll().orderBy('monthly_request_limit').orderBy('code').execute();
  return rows.map(toPlan);
}

function toPlan(row: { code: string; name: string; monthly_request_limit: number; created_at: Date }): Plan {
  return { code: row.code, name: row.name, monthlyRequestLimit: row.monthly_request_limit, createdAt: row.created_at };
}
