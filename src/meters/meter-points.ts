import type { Db } from '../db/database.ts';

/** The account's meter point named `externalId`, created on its first submission. */
export async function upsertMeterPoint(db: Db, accountId: string, externalId: string): Promise<string> {
  const point = await db
    .insertInto('meter_points')
    .values({ account_id: accountId, external_id: externalId })
    // A no-op update, so that RETURNING gives the id of an existing row too.
    .onConflict((conflict) => conflict.columns(['account_id', 'external_id']).doUpdateSet({ external_id: externalId }))
    .returning('id')
    .executeTakeFirstOrThrow();
  return point.id;
}

export async function findMeterPoint(db: Db, accountId: string, externalId: string) {
  return db
    .selectFrom('meter_points')
    .select(['id', 'external_id as externalId'])
    .where('account_id', '=', accountId)
    .where('external_id', '=', externalId)
    .executeTakeFirst();
}
