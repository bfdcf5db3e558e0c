import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { endpointNotFound, requireEndpointId } from '../webhooks/endpoints.ts';

const RECENT_DELIVERIES = 25;

/** One of the account's endpoints, secret left out; throws the endpoints' not-found error otherwise. */
export async function webhookEndpoint(db: Db, accountId: string, id: string) {
  const endpoint = await db
    .selectFrom('webhook_endpoints')
    .select(['id', 'url', 'events', 'enabled', 'disabled_reason', 'created_at'])
    .where('id', '=', requireEndpointId(id))
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (!endpoint) throw endpointNotFound();
  return endpoint;
}

/** "Show secret": the owner may see the signing secret again; it is stored for signing anyway. */
export async function webhookSecret(db: Db, accountId: string, id: string): Promise<string> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select('secret')
    .where('id', '=', requireEndpointId(id))
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (!row) throw endpointNotFound();
  return row.secret;
}

/** The endpoint's latest deliveries, newest first, with the latency of each one's last attempt. */
export async function recentDeliveries(db: Db, endpointId: string) {
  return db
    .selectFrom('webhook_deliveries as d')
    .select([
      'd.id',
      'd.event_type as eventType',
      'd.status',
      'd.attempt_count as attempts',
      'd.last_status_code as statusCode',
      'd.last_error as lastError',
      'd.next_attempt_at as nextAttemptAt',
      'd.created_at as createdAt',
      sql<string>`d.payload::text`.as('payload'),
      (eb) =>
        eb
          .selectFrom('webhook_attempts as a')
          .select('a.duration_ms')
          .whereRef('a.delivery_id', '=', 'd.id')
          .orderBy('a.attempt', 'desc')
          .limit(1)
          .as('latencyMs'),
    ])
    .where('d.endpoint_id', '=', endpointId)
    .orderBy('d.created_at', 'desc')
    .orderBy('d.id', 'desc')
    .limit(RECENT_DELIVERIES)
    .execute();
}
