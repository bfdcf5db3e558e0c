import type { FastifyInstance } from 'fastify';
import { buildApp, buildMetricsServer } from './app.ts';
import type { Config } from './config.ts';
import { connectDatabase } from './db/connect.ts';
import { createDatabase } from './db/database.ts';
import { migrate } from './db/migrate.ts';
import { createBoss, ensureQueues } from './queue.ts';
import { createReaderChain } from './readers/registry.ts';
import { startWorker } from './worker.ts';

const log = (message: string) => console.log(`[meterlens] ${message}`);

/** The release step: our SQL migrations, then pg-boss's schema and our queues. */
export async function runMigrations(config: Config): Promise<void> {
  const database = await connectDatabase(config, 'guest', log);
  try {
    await migrateAll(database.url, config);
  } finally {
    await database.stop();
  }
}

async function migrateAll(url: string, config: Config): Promise<void> {
  const applied = await migrate(url);
  log(applied.length ? `applied ${applied.join(', ')}` : 'schema up to date');
  const boss = createBoss(url, config, { supervise: false });
  await boss.start();
  await ensureQueues(boss, config);
  await boss.stop({ graceful: false });
}

/**
 * Runs the web process, the worker, or both in one process (`serve`, the embedded default).
 * SIGTERM/SIGINT: stop taking requests and finish those in flight, let running jobs finish (what
 * does not finish in time stays safely queued and is retried), then close the pool.
 */
export async function runService(config: Config, roles: { web: boolean; worker: boolean }): Promise<void> {
  const database = await connectDatabase(config, 'owner', log);
  const allInOne = roles.web && roles.worker;
  if (allInOne) await migrateAll(database.url, config);

  const db = createDatabase(database.url);
  const boss = createBoss(database.url, config, { supervise: roles.worker });
  boss.on('error', (error) => log(`queue error: ${error.message}`));
  await boss.start();
  const readers = await createReaderChain(config);
  log(`reader chain: ${readers.readers.map((reader) => reader.name).join(' → ') || '(none configured)'}`);

  if (roles.worker) {
    await startWorker({ config, db, boss, readers });
    log(`worker polling queues (concurrency ${config.workerConcurrency})`);
  }
  let app: FastifyInstance | undefined;
  if (roles.web) {
    app = await buildApp({ config, db, boss, readers });
    await app.listen({ port: config.port, host: config.host });
    log(`listening on ${config.publicUrl ?? `http://localhost:${config.port}`}`);
  } else if (config.metricsPort !== undefined) {
    app = await buildMetricsServer({ config, db });
    await app.listen({ port: config.metricsPort, host: config.host });
    log(`metrics on port ${config.metricsPort}`);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: shutting down`);
    await app?.close();
    await boss.stop({ graceful: true, timeout: 30_000 });
    await db.destroy();
    await database.stop();
    log('stopped');
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}
