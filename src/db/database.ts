import { CompiledQuery, Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Db as IDatabase } from 'pg-boss';
import { pgConnectionOptions } from './connect.ts';
import type { Database } from './schema.ts';

// `date` columns (api_usage.month) stay 'YYYY-MM-DD' strings instead of local-time Dates.
pg.types.setTypeParser(pg.types.builtins.DATE, (value) => value);

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;

export function createDatabase(connectionString: string, maxConnections = 10): Db {
  const pool = new pg.Pool({ ...pgConnectionOptions(connectionString), max: maxConnections });
  // An idle connection the server closes (restart, failover, shutdown) is dropped from the pool;
  // without a listener its error event would crash the process.
  pool.on('error', (error) => console.error(`[meterlens] idle database connection closed: ${error.message}`));
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
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
