import type { Config } from '../config.ts';
import type { Db, Tx } from '../db/database.ts';
import type { WebhookEndpoint } from '../db/schema.ts';
import { DomainError, requireId } from '../errors.ts';
import { assertPublicUrl } from './address-guard.ts';
import { DEFAULT_WEBHOOK_EVENTS, WEBHOOK_EVENTS, type WebhookEvent } from './events.ts';
import { newWebhookSecret } from './signature.ts';

const MAX_URL_LENGTH = 2048;

/**
 * The secret is returned here and by rotateWebhookSecret only: show it to the user once. An
 * account has at most WEBHOOK_ENDPOINTS_PER_ACCOUNT endpoints, since each event is POSTed to all.
 */
export async function addWebhookEndpoint(
  db: Db,
  config: Config,
  input: { accountId: string; url: string; events?: readonly string[] },
): Promise<{ id: string; secret: string }> {
  const url = await validateUrl(input.url, config);
  const events = validateEvents(input.events ?? [...DEFAULT_WEBHOOK_EVENTS]);
  const secret = newWebhookSecret();
  return db.transaction().execute(async (tx) => {
    await assertEndpointSlot(tx, input.accountId, config.webhookEndpointsPerAccount);
    const { id } = await tx
      .insertInto('webhook_endpoints')
      .values({ account_id: input.accountId, url, secret, events, disabled_reason: null })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { id, secret };
  });
}

/**
 * Locks the account's row first, so that concurrent adds count one after another: the cap is exact.
 * NO KEY UPDATE leaves the row free for the key-share locks of inserts that reference the account.
 */
async function assertEndpointSlot(tx: Tx, accountId: string, limit: number): Promise<void> {
  await tx.selectFrom('accounts').select('id').where('id', '=', accountId).forNoKeyUpdate().execute();
  const { count } = await tx
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  if (Number(count) >= limit) {
    throw new DomainError('conflict', 'endpoints', `This account already has ${count} webhook endpoints, the most it may have (${limit})`);
  }
}

export type WebhookEndpointSummary = Omit<WebhookEndpoint, 'secret' | 'account_id' | 'failing_since' | 'consecutive_failures'>;

export async function listWebhookEndpoints(db: Db, accountId: string): Promise<WebhookEndpointSummary[]> {
  return db
    .selectFrom('webhook_endpoints')
    .select(['id', 'url', 'events', 'enabled', 'disabled_reason', 'created_at'])
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute();
}

/**
 * The account's switch (dashboard), or the operator's (CLI: no account). Enabling starts a new
 * run of failures from nothing; disabling ends the endpoint's pending deliveries at once.
 */
export async function setWebhookEndpointEnabled(db: Db, accountId: string | undefined, id: string, enabled: boolean): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const endpoint = await tx
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('id', '=', requireEndpointId(id))
      .$if(accountId !== undefined, (query) => query.where('account_id', '=', accountId!))
      .forNoKeyUpdate()
      .executeTakeFirst();
    if (!endpoint) throw endpointNotFound();
    if (!enabled) return disableEndpoint(tx, endpoint.id, accountId === undefined ? 'Disabled by the operator' : 'Disabled by the account');
    await tx
      .updateTable('webhook_endpoints')
      .set({ enabled: true, disabled_reason: null, failing_since: null, consecutive_failures: 0 })
      .where('id', '=', endpoint.id)
      .execute();
  });
}

/**
 * The account's delete (dashboard), or the operator's (CLI: no account). The endpoint's deliveries
 * and their attempts go with it (the foreign keys cascade): a delivery job that runs later finds
 * nothing to send, and one whose attempt is under way records nothing, as for a used-up delivery.
 * FOR UPDATE waits for an attempt being recorded (which locks the endpoint) to finish first.
 */
export async function deleteWebhookEndpoint(db: Db, accountId: string | undefined, id: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const endpoint = await tx
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('id', '=', requireEndpointId(id))
      .$if(accountId !== undefined, (query) => query.where('account_id', '=', accountId!))
      .forUpdate()
      .executeTakeFirst();
    if (!endpoint) throw endpointNotFound();
    await tx.deleteFrom('webhook_endpoints').where('id', '=', endpoint.id).execute();
  });
}

/**
 * Stops deliveries to the endpoint: its pending deliveries fail now, with the reason as their
 * last error, instead of waiting out their retries.
 */
export async function disableEndpoint(tx: Tx, endpointId: string, reason: string): Promise<void> {
  await tx.updateTable('webhook_endpoints').set({ enabled: false, disabled_reason: reason }).where('id', '=', endpointId).execute();
  await tx
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', next_attempt_at: null, last_error: endpointDisabledError(reason) })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .execute();
}

/**
 * Every transaction that changes an endpoint's deliveries and the endpoint itself locks the
 * endpoint first, as disabling does, so that they cannot deadlock.
 */
export async function lockEndpoint(tx: Tx, endpointId: string): Promise<void> {
  await tx.selectFrom('webhook_endpoints').select('id').where('id', '=', endpointId).forNoKeyUpdate().execute();
}

export const endpointDisabledError = (reason: string | null): string => `Endpoint disabled: ${reason ?? 'no reason given'}`;

/** The old secret stops working at once; deliveries still pending are signed with the new one. */
export async function rotateWebhookSecret(db: Db, accountId: string, id: string): Promise<{ secret: string }> {
  const secret = newWebhookSecret();
  const result = await db
    .updateTable('webhook_endpoints')
    .set({ secret })
    .where('id', '=', requireEndpointId(id))
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw endpointNotFound();
  return { secret };
}

/** Ids come from URLs: anything that is not an id is simply not found. */
export function requireEndpointId(id: string): string {
  return requireId(id, 'endpoint id', endpointNotFound);
}

export function endpointNotFound(): DomainError {
  return new DomainError('not_found', 'endpoint id', 'Webhook endpoint not found');
}

async function validateUrl(raw: string, config: Config): Promise<string> {
  if (raw.length > MAX_URL_LENGTH) throw new DomainError('invalid', 'url', `The URL is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new DomainError('invalid', 'url', 'The URL is not valid');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new DomainError('invalid', 'url', 'The URL must start with http:// or https://');
  }
  if (url.username || url.password) {
    throw new DomainError('invalid', 'url', 'The URL must not contain a user name or password: they would not be sent');
  }
  if (!config.webhookAllowPrivate) {
    try {
      await assertPublicUrl(url);
    } catch (error) {
      throw new DomainError('invalid', 'url', (error as Error).message);
    }
  }
  return url.toString();
}

function validateEvents(events: readonly string[]): WebhookEvent[] {
  if (events.length === 0) throw new DomainError('invalid', 'events', 'Choose at least one event');
  const unknown = events.filter((event) => !isWebhookEvent(event));
  if (unknown.length) {
    throw new DomainError('invalid', 'events', `Unknown events: ${unknown.join(', ')}; known events are ${WEBHOOK_EVENTS.join(', ')}`);
  }
  return [...new Set(events.filter(isWebhookEvent))];
}

const isWebhookEvent = (event: string): event is WebhookEvent => (WEBHOOK_EVENTS as readonly string[]).includes(event);
