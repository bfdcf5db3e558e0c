import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import type { WebhookEndpoint } from '../db/schema.ts';
import { assertPublicUrl } from './address-guard.ts';
import { DEFAULT_WEBHOOK_EVENTS, WEBHOOK_EVENTS, type WebhookEvent } from './events.ts';
import { newWebhookSecret } from './signature.ts';

const MAX_URL_LENGTH = 2048;

/** `invalid`: the input cannot be accepted (400); `not_found`: no such endpoint on this account (404). */
export class WebhookEndpointError extends Error {
  readonly reason: 'invalid' | 'not_found';

  constructor(reason: 'invalid' | 'not_found', message: string) {
    super(message);
    this.name = 'WebhookEndpointError';
    this.reason = reason;
  }
}

/** The secret is returned here and by rotateWebhookSecret only: show it to the user once. */
export async function addWebhookEndpoint(
  db: Db,
  config: Config,
  input: { accountId: string; url: string; events?: readonly string[] },
): Promise<{ id: string; secret: string }> {
  const url = await validateUrl(input.url, config);
  const events = validateEvents(input.events ?? [...DEFAULT_WEBHOOK_EVENTS]);
  const secret = newWebhookSecret();
  const { id } = await db
    .insertInto('webhook_endpoints')
    .values({ account_id: input.accountId, url, secret, events, disabled_reason: null })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { id, secret };
}

export type WebhookEndpointSummary = Omit<WebhookEndpoint, 'secret' | 'account_id'>;

export async function listWebhookEndpoints(db: Db, accountId: string): Promise<WebhookEndpointSummary[]> {
  return db
    .selectFrom('webhook_endpoints')
    .select(['id', 'url', 'events', 'enabled', 'disabled_reason', 'created_at'])
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute();
}

export async function setWebhookEndpointEnabled(db: Db, accountId: string, id: string, enabled: boolean): Promise<void> {
  const result = await db
    .updateTable('webhook_endpoints')
    .set({ enabled, disabled_reason: enabled ? null : 'Disabled by the account' })
    .where('id', '=', parseId(id, endpointNotFound))
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw endpointNotFound();
}

/** The old secret stops working at once; deliveries still pending are signed with the new one. */
export async function rotateWebhookSecret(db: Db, accountId: string, id: string): Promise<{ secret: string }> {
  const secret = newWebhookSecret();
  const result = await db
    .updateTable('webhook_endpoints')
    .set({ secret })
    .where('id', '=', parseId(id, endpointNotFound))
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw endpointNotFound();
  return { secret };
}

/** Ids come from URLs: anything that is not a bigint is simply not found. */
export function parseId(id: string, notFound: () => WebhookEndpointError): string {
  if (!/^\d{1,18}$/.test(id)) throw notFound();
  return id;
}

export function endpointNotFound(): WebhookEndpointError {
  return new WebhookEndpointError('not_found', 'Webhook endpoint not found');
}

async function validateUrl(raw: string, config: Config): Promise<string> {
  if (raw.length > MAX_URL_LENGTH) throw new WebhookEndpointError('invalid', `The URL is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookEndpointError('invalid', 'The URL is not valid');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new WebhookEndpointError('invalid', 'The URL must start with http:// or https://');
  }
  if (url.username || url.password) {
    throw new WebhookEndpointError('invalid', 'The URL must not contain a user name or password: they would not be sent');
  }
  if (!config.webhookAllowPrivate) {
    try {
      await assertPublicUrl(url);
    } catch (error) {
      throw new WebhookEndpointError('invalid', (error as Error).message);
    }
  }
  return url.toString();
}

function validateEvents(events: readonly string[]): WebhookEvent[] {
  if (events.length === 0) throw new WebhookEndpointError('invalid', 'Choose at least one event');
  const unknown = events.filter((event) => !isWebhookEvent(event));
  if (unknown.length) {
    throw new WebhookEndpointError('invalid', `Unknown events: ${unknown.join(', ')}; known events are ${WEBHOOK_EVENTS.join(', ')}`);
  }
  return [...new Set(events.filter(isWebhookEvent))];
}

const isWebhookEvent = (event: string): event is WebhookEvent => (WEBHOOK_EVENTS as readonly string[]).includes(event);
