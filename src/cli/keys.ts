import { createApiKey, deleteApiKey, listApiKeys, setApiKeyStatus, type ApiKeySummary } from '../accounts/api-keys.ts';
import type { ApiKeyStatus } from '../db/schema.ts';
import { requireId } from '../errors.ts';
import { requiredOption, singlePositional, type CommandArgs } from './args.ts';
import type { Command } from './context.ts';
import { jsonId, table } from './output.ts';

export const keyCommands: Command[] = [
  {
    name: 'keys create',
    synopsis: '--account ID --project NAME [--inactive]',
    description: 'create an API key and print it; it is shown this once only',
    options: { account: { type: 'string' }, project: { type: 'string' }, inactive: { type: 'boolean' } },
    async run({ database, output }, args) {
      const input = {
        accountId: requireId(requiredOption(args, 'account'), '--account'),
        projectName: requiredOption(args, 'project'),
        status: args.values.inactive ? ('inactive' as const) : ('active' as const),
      };
      const { id, key } = await createApiKey(await database(), input);
      output.print({ id: jsonId(id), key }, [`created key ${id}; store it now, it is not shown again:`, key]);
    },
  },
  {
    name: 'keys list',
    synopsis: '--account ID',
    description: "list an account's keys (never the keys themselves)",
    options: { account: { type: 'string' } },
    async run({ database, output }, args) {
      const accountId = requireId(requiredOption(args, 'account'), '--account');
      const keys = await listApiKeys(await database(), accountId);
      output.print(
        { keys: keys.map(keyJson) },
        table(
          ['ID', 'PROJECT', 'STATUS', 'KEY', 'CREATED', 'LAST USED'],
          keys.map((key) => [
            key.id,
            key.projectName,
            key.status,
            `${key.displayPrefix}…${key.displaySuffix}`,
            key.createdAt.toISOString(),
            key.lastUsedAt?.toISOString() ?? 'never',
          ]),
        ),
      );
    },
  },
  statusCommand('enable', 'active'),
  statusCommand('disable', 'inactive'),
  {
    name: 'keys delete',
    synopsis: 'ID',
    description: 'delete a key for good; requests with it are refused',
    positionals: true,
    async run({ database, output }, args) {
      const id = keyId(args);
      await deleteApiKey(await database(), undefined, id);
      output.print({ id: jsonId(id), deleted: true }, `deleted key ${id}`);
    },
  },
];

function statusCommand(verb: string, status: ApiKeyStatus): Command {
  return {
    name: `keys ${verb}`,
    synopsis: 'ID',
    description: `make a key ${status}`,
    positionals: true,
    async run({ database, output }, args) {
      const id = keyId(args);
      const key = await setApiKeyStatus(await database(), undefined, id, status);
      output.print(keyJson(key), `key ${key.id} (${key.projectName}) is now ${key.status}`);
    },
  };
}

function keyId(args: CommandArgs): string {
  return requireId(singlePositional(args, 'key id'), 'key id');
}

function keyJson(key: ApiKeySummary): object {
  return { ...key, id: jsonId(key.id), accountId: jsonId(key.accountId) };
}
