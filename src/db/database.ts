import { CompiledQuery, Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Db as IDatabase } from 'pg-boss';
import { pgConnectionOptions } from './connect.ts';
import type { Database } from './schema.ts';

// `date` columns (api_usage.month) stay 'YYYY-MM-DD' strings instead of local-time Dates.
pg.types.setTypeParser(pg.types.builtins.DATE, (value) => value);

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;

/**
 * How long a query waits for a connection (a new one, or a free one of the pool) before the database counts as
 * unavailable: a server that does not answer at all must not hang requests for the kernel's two-minute connect timeout.
 */
const CONNECT_TIMEOUT_MS = 10_000;

export function createDatabase(
  connectionString: string,
  maxConnections = 10,
  connectTimeoutMs = CONNECT_TIMEOUT_MS,
): Db {
  const pool = new pg.Pool({
    ...pgConnectionOptions(connectionString),
    max: maxConnections,
    connectionTimeoutMillis: connectTimeoutMs,
  });
  // An idle connection the server closes (restart, failover, shutdown) is dropped from the pool;
  // without a listener its error event would crash the process.
  pool.on('error', (error) => console.error(`[meterlens] idle database connection closed: ${error.message}`));
  // A connection checked out of the pool has no listener either: one closed by the server between two
  // queries of a transaction would crash the process. Its queries still fail and are answered by the caller.
  pool.on('connect', (client) => client.on('error', () => {}));
  const connect = () =>
    pool.connect().catch((error: Error) => {
      throw new DatabaseUnavailableError(error);
    });
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: { connect, end: () => pool.end() } }) });
}

/** No connection to the database could be had: the server is down, full, or refuses this database. */
export class DatabaseUnavailableError extends Error {
  constructor(cause: Error) {
    super(`no database connection: ${cause.message}`, { cause });
    this.name = 'DatabaseUnavailableError';
  }
}

/**
 * PostgreSQL's codes for a connection that failed or was cut: admin/crash shutdown, cannot connect
 * now, too many clients, and the whole 08 class (connection exceptions).
 */
const CONNECTION_LOST_CODES = new Set(['57P01', '57P02', '57P03', '53300']);
const NETWORK_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Whether an error means the database could not be reached (an outage), not that a query was wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (
    typeof code === 'string' &&
    (CONNECTION_LOST_CODES.has(code) || code.startsWith('08') || NETWORK_ERROR_CODES.has(code))
  )
    return true;
  // node-postgres' own words when the socket closes under a query; it gives them no code.
  return /^Connection terminated/.test(error.message);
}

/** Lets pg-boss write its job rows inside one of our Kysely transactions. */
export function bossAdapter(tx: Tx | Db): IDatabase {
  return {
    async executeSql(text, values) {
      const result = await tx.executeQuery(CompiledQuery.raw(text, values ?? []));
      return { rows: result.rows as unknown[] };
    },
  };
}
