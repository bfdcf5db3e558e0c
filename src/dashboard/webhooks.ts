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

/**
 * The endpoint's latest deliveries, newest first, with the latency of each one's last attempt and
 * every attempt: when, the HTTP status or the error, how long, and the start of the answer.
 */
export async function recentDeliveries(db: Db, endpointId: string) {
  const deliveries = await db
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
  const attempts = deliveries.length
    ? await db
        .selectFrom('webhook_attempts')
        .select([
          'delivery_id',
          'attempt',
          'started_at as startedAt',
          'status_code as statusCode',
          'error',
          'duration_ms as durationMs',
          'response_body_start as responseBodyStart',
        ])
        .where(
          'delivery_id',
          'in',
          deliveries.map((delivery) => delivery.id),
        )
        .orderBy('attempt')
        .execute()
    : [];
  return deliveries.map((delivery) => ({
    ...delivery,
    attemptLog: attempts.filter((attempt) => attempt.delivery_id === delivery.id),
  }));
}

/** The account's latest deliveries to endpoints it deleted, kept until WEBHOOK_RETENTION_DAYS. */
export async function deletedEndpointDeliveries(db: Db, accountId: string) {
  return db
    .selectFrom('webhook_deliveries')
    .select([
      'id',
      'event_type as eventType',
      'deleted_endpoint_url as url',
      'status',
      'attempt_count as attempts',
      'last_status_code as statusCode',
      'last_error as lastError',
      'created_at as createdAt',
    ])
    .where('account_id', '=', accountId)
    .where('endpoint_id', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(RECENT_DELIVERIES)
    .execute();
}
