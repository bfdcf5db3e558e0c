import type { FastifyInstance } from 'fastify';
import { buildApp, buildMetricsServer } from './app.ts';
import type { Config } from './config.ts';
import { connectDatabase } from './db/connect.ts';
import { createDatabase } from './db/database.ts';
import { migrate } from './db/migrate.ts';
import { PhotoStore } from './photos/store.ts';
import { createBoss, ensureQueues } from './queue.ts';
import { describeWeights } from './readers/local/provenance.ts';
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
 * SIGTERM/SIGINT: stop taking requests and finish those in flight, let running jobs finish, for
 * at most SHUTDOWN_GRACE_SECONDS; then cut the connections still open and leave unfinished jobs
 * to the queue (they are retried), close the pool, stop the embedded database and exit.
 */
export async function runService(config: Config, roles: { web: boolean; worker: boolean }): Promise<void> {
  const database = await connectDatabase(config, 'owner', log);
  const allInOne = roles.web && roles.worker;
  if (allInOne) await migrateAll(database.url, config);

  const db = createDatabase(database.url);
  const boss = createBoss(database.url, config, { supervise: roles.worker });
  boss.on('error', (error) => log(`queue error: ${error.message}`));
  await boss.start();
  const photos = new PhotoStore(config.photoStore);
  const readers = await createReaderChain(config);
  log(`reader chain: ${readers.readers.map((reader) => reader.name).join(' → ') || '(none configured)'}`);
  if (readers.readers.some((reader) => reader.name === 'local')) log(describeWeights(config.localModelDir));

  if (roles.worker) {
    await startWorker({ config, db, photos, boss, readers });
    log(`worker polling queues (concurrency ${config.workerConcurrency})`);
  }
  let app: FastifyInstance | undefined;
  if (roles.web) {
    app = await buildApp({ config, db, photos, boss, readers });
    await app.listen({ port: config.port, host: config.host });
    log(`listening on ${config.publicUrl ?? `http://localhost:${config.port}`}`);
  } else if (config.metricsPort !== undefined) {
    app = await buildMetricsServer({ config, db });
    await app.listen({ port: config.metricsPort, host: config.host });
    log(`metrics on port ${config.metricsPort}`);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return log(`${signal}: already shutting down`);
    stopping = true;
    const graceMs = config.shutdownGraceSeconds * 1000;
    const graceEnds = Date.now() + graceMs;
    log(`${signal}: shutting down (up to ${config.shutdownGraceSeconds} s for requests and jobs in flight)`);
    // Whatever hangs below (a pool that never drains, a database that does not stop), the process ends.
    setTimeout(() => {
      log('shutdown did not finish: exiting');
      process.exit(1);
    }, graceMs + LAST_RESORT_MS).unref();
    if (app) await closeWeb(app, graceMs);
    // Jobs still running at the end of the grace period are failed back to the queue, which retries them.
    await boss.stop({ graceful: true, timeout: Math.max(graceEnds - Date.now(), 0) });
    await settleWithin(db.destroy(), POOL_CLOSE_MS);
    await database.stop().catch((error: Error) => log(error.message));
    log('stopped');
    process.exit(0);
  };
  // Kept for the whole shutdown (not `once`): a signal that comes again, as Ctrl-C under `npm start` does (the
  // terminal's and the one npm forwards), would otherwise end the process at once and leave the embedded PostgreSQL
  // running.
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** Time to close the pool after the grace period: a connection still checked out is not waited for longer. */
const POOL_CLOSE_MS = 2_000;
/** Past the grace period plus this, the process exits whatever is still running. */
const LAST_RESORT_MS = 15_000;

/**
 * Stops taking requests and lets those in flight finish; connections still open when the grace
 * period ends (a hung upload, a slow reading) are destroyed.
 */
async function closeWeb(app: FastifyInstance, graceMs: number): Promise<void> {
  const cutConnections = setTimeout(() => {
    log('grace period over: closing the connections still open');
    app.server.closeAllConnections();
  }, graceMs);
  await app.close();
  clearTimeout(cutConnections);
}

async function settleWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise.catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
