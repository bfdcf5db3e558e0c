import { requireAccount } from '../accounts/require-account.ts';
import { requireId } from '../errors.ts';
import {
  addWebhookEndpoint,
  deleteWebhookEndpoint,
  listWebhookEndpoints,
  setWebhookEndpointEnabled,
} from '../webhooks/endpoints.ts';
import { DEFAULT_WEBHOOK_EVENTS, WEBHOOK_EVENTS } from '../webhooks/events.ts';
import { optionalOption, requiredOption, singlePositional } from './args.ts';
import type { Command } from './context.ts';
import { jsonId, table } from './output.ts';

export const webhookCommands: Command[] = [
  {
    name: 'webhooks add',
    synopsis: '--account ID --url URL [--events EVENT,…]',
    description:
      'add a webhook endpoint and print its signing secret; it is shown this once only. ' +
      `Events: ${WEBHOOK_EVENTS.join(', ')} (default ${DEFAULT_WEBHOOK_EVENTS.join(',')})`,
    options: { account: { type: 'string' }, url: { type: 'string' }, events: { type: 'string' } },
    async run({ config, database, output }, args) {
      const accountId = requireId(requiredOption(args, 'account'), '--account');
      const url = requiredOption(args, 'url');
      // addWebhookEndpoint checks the names against the events it knows.
      const events = optionalOption(args, 'events')
        ?.split(',')
        .map((event) => event.trim());
      const db = await database();
      await requireAccount(db, accountId);
      const { id, secret } = await addWebhookEndpoint(db, config, { accountId, url, events });
      output.print({ id: jsonId(id), secret }, [
        `added webhook endpoint ${id}; its signing secret, shown this once:`,
        secret,
      ]);
    },
  },
  {
    name: 'webhooks list',
    synopsis: '--account ID',
    description: "list an account's webhook endpoints",
    options: { account: { type: 'string' } },
    async run({ database, output }, args) {
      const accountId = requireId(requiredOption(args, 'account'), '--account');
      const endpoints = await listWebhookEndpoints(await database(), accountId);
      output.print(
        {
          endpoints: endpoints.map((endpoint) => ({
            id: jsonId(endpoint.id),
            url: endpoint.url,
            events: endpoint.events,
            enabled: endpoint.enabled,
            disabledReason: endpoint.disabled_reason,
            createdAt: endpoint.created_at,
          })),
        },
        table(
          ['ID', 'URL', 'EVENTS', 'STATUS'],
          endpoints.map((endpoint) => [
            endpoint.id,
            endpoint.url,
            endpoint.events.join(','),
            endpoint.enabled ? 'enabled' : `disabled (${endpoint.disabled_reason ?? 'no reason given'})`,
          ]),
        ),
      );
    },
  },
  switchCommand(
    'enable',
    true,
    'enable a webhook endpoint again, such as one disabled after its deliveries kept failing',
  ),
  switchCommand(
    'disable',
    false,
    'disable a webhook endpoint: its pending deliveries fail now and no events are sent to it',
  ),
  {
    name: 'webhooks delete',
    synopsis: 'ID',
    description: 'delete a webhook endpoint: its pending deliveries end and nothing more is sent to it',
    positionals: true,
    async run({ database, output }, args) {
      const id = requireId(singlePositional(args, 'endpoint id'), 'endpoint id');
      await deleteWebhookEndpoint(await database(), undefined, id);
      output.print({ id: jsonId(id), deleted: true }, `deleted webhook endpoint ${id}`);
    },
  },
];

function switchCommand(verb: string, enabled: boolean, description: string): Command {
  return {
    name: `webhooks ${verb}`,
    synopsis: 'ID',
    description,
    positionals: true,
    async run({ database, output }, args) {
      const id = requireId(singlePositional(args, 'endpoint id'), 'endpoint id');
      await setWebhookEndpointEnabled(await database(), undefined, id, enabled);
      output.print({ id: jsonId(id), enabled }, `webhook endpoint ${id} is now ${verb}d`);
    },
  };
}
