import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { pgConnectionOptions } from './connect.ts';

const SQL_DIR = path.join(import.meta.dirname, '..', '..', 'sql');
const MIGRATION_FILE = /^(\d+)_[\w-]+\.sql$/;
/** Any constant works; it only has to be the same for every process that migrates. */
const MIGRATION_LOCK_KEY = 741_208_113;

/**
 * Applies sql/NNN_name.sql files in order, each once, each in its own transaction, under an
 * advisory lock so that concurrent releases or dynos cannot apply the same file twice.
 * Returns the files applied by this call.
 */
export async function migrate(connectionString: string): Promise<string[]> {
  const client = new pg.Client(pgConnectionOptions(connectionString));
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version    integer PRIMARY KEY,
        name       text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const applied = new Set(
      (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((row) => row.version),
    );
    const appliedNow: string[] = [];
    for (const file of await migrationFiles()) {
      if (applied.has(file.version)) continue;
      const text = await readFile(path.join(SQL_DIR, file.name), 'utf8');
      await client.query('BEGIN');
      try {
        await client.query(text);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [file.version, file.name]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${file.name} failed: ${(error as Error).message}`, { cause: error });
      }
      appliedNow.push(file.name);
    }
    return appliedNow;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    await client.end();
  }
}

async function migrationFiles(): Promise<Array<{ version: number; name: string }>> {
  const files = [];
  for (const name of await readdir(SQL_DIR)) {
    const match = MIGRATION_FILE.exec(name);
    if (match) files.push({ version: Number(match[1]), name });
  }
  return files.sort((a, b) => a.version - b.version);
}
