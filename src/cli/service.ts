import type { Command } from './context.ts';

const SERVICE_ROLES = [
  { name: 'serve', roles: { web: true, worker: true }, description: 'run the HTTP API and the worker in one process' },
  { name: 'web', roles: { web: true, worker: false }, description: 'run the HTTP API only' },
  { name: 'worker', roles: { web: false, worker: true }, description: 'run the worker only' },
];

// The server's modules (Fastify, pg-boss, readers) load only for these commands, keeping the others quick to start.
export const serviceCommands: Command[] = [
  ...SERVICE_ROLES.map(
    ({ name, roles, description }): Command => ({
      name,
      synopsis: '',
      description,
      keepsRunning: true,
      async run({ config }) {
        const { runService } = await import('../service.ts');
        await runService(config, roles);
      },
    }),
  ),
  {
    name: 'migrate',
    synopsis: '',
    description: 'apply database migrations and create the queues, then exit',
    async run({ config }) {
      const { runMigrations } = await import('../service.ts');
      await runMigrations(config);
    },
  },
];
