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
    await assertUrlUnused(tx, input.accountId, url);
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
    throw new DomainError(
      'conflict',
      'endpoints',
      `This account already has ${count} webhook endpoints, the most it may have (${limit})`,
    );
  }
}

/**
 * Locks the account's row as adding does, so that an add and an edit cannot both take one URL.
 * The receiver gets every event once per endpoint: a second endpoint with the same URL would get
 * each twice.
 */
async function assertUrlUnused(tx: Tx, accountId: string, url: string, exceptEndpointId?: string): Promise<void> {
  await tx.selectFrom('accounts').select('id').where('id', '=', accountId).forNoKeyUpdate().execute();
  const others = await tx
    .selectFrom('webhook_endpoints')
    .select(['id', 'url'])
    .where('account_id', '=', accountId)
    .$if(exceptEndpointId !== undefined, (query) => query.where('id', '<>', exceptEndpointId!))
    .execute();
  const same = others.find((other) => sameReceiver(other.url, url));
  if (same) {
    throw new DomainError(
      'conflict',
      'url',
      `Endpoint ${same.id} already has this URL (${same.url}): change its events instead of adding it twice`,
    );
  }
}

/**
 * Both URLs as the URL parser writes them (scheme and host in lower case, no default port, `/` for
 * an empty path), compared without the fragment, which is never sent, and without one trailing
 * slash of the path: `/hook` and `/hook/` reach the same handler on most servers. The query counts.
 */
function sameReceiver(a: string, b: string): boolean {
  const comparable = (raw: string) => {
    const url = new URL(raw);
    url.hash = '';
    url.pathname = url.pathname.replace(/\/$/, '');
    return url.toString();
  };
  return comparable(a) === comparable(b);
}

/**
 * The URL is checked as on add, the address guard included. A new URL is a new receiver: the run
 * of failures starts again (an endpoint disabled after failing stays disabled until enabled). The
 * endpoint's pending deliveries keep their schedule and go to the new URL: they are the account's
 * events, and the new URL is where the account now takes them.
 */
export async function updateWebhookEndpoint(
  db: Db,
  config: Config,
  input: { accountId: string; id: string; url: string; events: readonly string[] },
): Promise<void> {
  const id = requireEndpointId(input.id);
  // Someone else's endpoint is not found, whatever the form holds.
  const owned = await db
    .selectFrom('webhook_endpoints')
    .select('id')
    .where('id', '=', id)
    .where('account_id', '=', input.accountId)
    .executeTakeFirst();
  if (!owned) throw endpointNotFound();
  const url = await validateUrl(input.url, config);
  const events = validateEvents(input.events);
  await db.transaction().execute(async (tx) => {
    await assertUrlUnused(tx, input.accountId, url, id);
    const endpoint = await tx
      .selectFrom('webhook_endpoints')
      .select('url')
      .where('id', '=', id)
      .where('account_id', '=', input.accountId)
      .forNoKeyUpdate()
      .executeTakeFirst();
    if (!endpoint) throw endpointNotFound();
    await tx
      .updateTable('webhook_endpoints')
      .set({ url, events, ...(url === endpoint.url ? {} : { failing_since: null, consecutive_failures: 0 }) })
      .where('id', '=', id)
      .execute();
  });
}

/**
 * The account's (dashboard) or the operator's (CLI: no account). Its pending deliveries fail now
 * with the reason as their last error; they and its past deliveries stay in the account's history
 * (endpoint_id NULL, deleted_endpoint_url kept) until WEBHOOK_RETENTION_DAYS. The row lock is
 * FOR UPDATE, so events being queued for the endpoint are waited for (and ended here) and events
 * queued after skip it.
 */
export async function deleteWebhookEndpoint(
  db: Db,
  accountId: string | undefined,
  endpointId: string,
): Promise<{ url: string; endedDeliveries: number }> {
  return db.transaction().execute(async (tx) => {
    const endpoint = await tx
      .selectFrom('webhook_endpoints')
      .select(['id', 'url'])
      .where('id', '=', requireEndpointId(endpointId))
      .$if(accountId !== undefined, (query) => query.where('account_id', '=', accountId!))
      .forUpdate()
      .executeTakeFirst();
    if (!endpoint) throw endpointNotFound();
    const ended = await tx
      .updateTable('webhook_deliveries')
      .set({
        status: 'failed',
        next_attempt_at: null,
        last_error: endpointDeletedError(accountId === undefined ? 'by the operator' : 'by the account'),
      })
      .where('endpoint_id', '=', endpoint.id)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    await tx
      .updateTable('webhook_deliveries')
      .set({ endpoint_id: null, deleted_endpoint_url: endpoint.url })
      .where('endpoint_id', '=', endpoint.id)
      .execute();
    await tx.deleteFrom('webhook_endpoints').where('id', '=', endpoint.id).execute();
    return { url: endpoint.url, endedDeliveries: Number(ended.numUpdatedRows) };
  });
}

const endpointDeletedError = (by: string): string => `Endpoint deleted ${by} before this delivery succeeded`;

export type WebhookEndpointSummary = Omit<
  WebhookEndpoint,
  'secret' | 'account_id' | 'failing_since' | 'consecutive_failures'
>;

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
export async function setWebhookEndpointEnabled(
  db: Db,
  accountId: string | undefined,
  id: string,
  enabled: boolean,
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const endpoint = await tx
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('id', '=', requireEndpointId(id))
      .$if(accountId !== undefined, (query) => query.where('account_id', '=', accountId!))
      .forNoKeyUpdate()
      .executeTakeFirst();
    if (!endpoint) throw endpointNotFound();
    if (!enabled)
      return disableEndpoint(
        tx,
        endpoint.id,
        accountId === undefined ? 'Disabled by the operator' : 'Disabled by the account',
      );
    await tx
      .updateTable('webhook_endpoints')
      .set({ enabled: true, disabled_reason: null, failing_since: null, consecutive_failures: 0 })
      .where('id', '=', endpoint.id)
      .execute();
  });
}

/**
 * Stops deliveries to the endpoint: its pending deliveries fail now, with the reason as their
 * last error, instead of waiting out their retries.
 */
export async function disableEndpoint(tx: Tx, endpointId: string, reason: string): Promise<void> {
  await tx
    .updateTable('webhook_endpoints')
    .set({ enabled: false, disabled_reason: reason })
    .where('id', '=', endpointId)
    .execute();
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

export const endpointDisabledError = (reason: string | null): string =>
  `Endpoint disabled: ${reason ?? 'no reason given'}`;

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
  if (raw.length > MAX_URL_LENGTH)
    throw new DomainError('invalid', 'url', `The URL is longer than ${MAX_URL_LENGTH} characters`);
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
    throw new DomainError(
      'invalid',
      'events',
      `Unknown events: ${unknown.join(', ')}; known events are ${WEBHOOK_EVENTS.join(', ')}`,
    );
  }
  return [...new Set(events.filter(isWebhookEvent))];
}

const isWebhookEvent = (event: string): event is WebhookEvent => (WEBHOOK_EVENTS as readonly string[]).includes(event);
