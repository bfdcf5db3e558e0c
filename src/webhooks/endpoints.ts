import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import type { WebhookEndpoint } from '../db/schema.ts';
import { DomainError, requireId } from '../errors.ts';
import { assertPublicUrl } from './address-guard.ts';
import { DEFAULT_WEBHOOK_EVENTS, WEBHOOK_EVENTS, type WebhookEvent } from './events.ts';
import { newWebhookSecret } from './signature.ts';

const MAX_URL_LENGTH = 2048;

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
    .where('id', '=', requireEndpointId(id))
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
