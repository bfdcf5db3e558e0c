import type { PgBoss } from 'pg-boss';
import type { Config } from '../config.ts';
import { connectDatabase } from '../db/connect.ts';
import { createDatabase, type Db } from '../db/database.ts';
import { migrate } from '../db/migrate.ts';
import { createBoss } from '../queue.ts';
import type { CommandArgs } from './args.ts';
import type { Output } from './output.ts';

export interface CommandContext {
  config: Config;
  output: Output;
  /** Opened on first use, so commands that need no database (read) never start one. */
  database(): Promise<Db>;
  /** The job queue in that database, for commands whose change sends webhook events. */
  queue(): Promise<PgBoss>;
}

export interface Command {
  /** The words that select it, e.g. `keys create`. */
  name: string;
  /** Arguments after the name, as the usage text shows them. */
  synopsis: string;
  description: string;
  options?: Record<string, { type: 'string' | 'boolean' }>;
  /** Whether the command takes arguments that are not options (ids, files). */
  positionals?: boolean;
  /** The process outlives run() (serve, web, worker) and ends on a signal. */
  keepsRunning?: boolean;
  /** Resolves to the exit code, 0 when left out. */
  run(context: CommandContext, args: CommandArgs): Promise<number | undefined>;
}

/** Runs `use` with a context whose database, if it was opened, is closed afterwards. */
export async function withCommandContext<T>(
  config: Config,
  output: Output,
  use: (context: CommandContext) => Promise<T>,
): Promise<T> {
  let opened: Promise<OpenDatabase> | undefined;
  let queue: Promise<PgBoss> | undefined;
  const open = () => (opened ??= openDatabase(config));
  const context: CommandContext = {
    config,
    output,
    database: async () => (await open()).db,
    queue: async () => (queue ??= open().then((database) => startQueue(database.url, config))),
  };
  try {
    return await use(context);
  } finally {
    await queue?.then(
      (boss) => boss.stop({ graceful: false }),
      () => {},
    );
    await opened?.then(
      (database) => database.close(),
      () => {},
    );
  }
}

interface OpenDatabase {
  db: Db;
  url: string;
  close(): Promise<void>;
}

/** Sends only: the worker processes supervise the queues. */
async function startQueue(url: string, config: Config): Promise<PgBoss> {
  const boss = createBoss(url, config, { supervise: false });
  await boss.start();
  return boss;
}

/**
 * DATABASE_URL, or else the embedded PostgreSQL under DATA_DIR, joined as a guest: the same
 * database a running `meterlens serve` uses, and left running if the server owns it.
 */
async function openDatabase(config: Config): Promise<OpenDatabase> {
  const connection = await connectDatabase(config, 'guest', (message) =>
    process.stderr.write(`meterlens: ${message}\n`),
  );
  try {
    await migrate(connection.url);
  } catch (error) {
    await connection.stop();
    throw error;
  }
  const db = createDatabase(connection.url, 2);
  return {
    db,
    url: connection.url,
    close: async () => {
      await db.destroy();
      await connection.stop();
    },
  };
}
