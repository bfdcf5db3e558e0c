import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createBoss, ensureQueues } from '../../src/queue.ts';

const TEMPLATE_LOCK_KEY = 741_208_114;

/**
 * A fresh database for one test file, cloned from a migrated template (our SQL and pg-boss's
 * schema) so each file starts from the same clean state in a few milliseconds. Dropped by `drop`.
 */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) throw new Error('DATABASE_URL is unset: run the suite with `npm test`');
  const template = await ensureTemplate(adminUrl);
  const name = `meterlens_test_${randomBytes(6).toString('hex')}`;
  await withClient(adminUrl, (client) => client.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  return {
    url: databaseUrl(adminUrl, name),
    drop: () =>
      withClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {}),
  };
}

/** The template's name carries a hash of the migrations, so a changed sql/ gets a new template. */
async function ensureTemplate(adminUrl: string): Promise<string> {
  const name = `meterlens_template_${schemaFingerprint()}`;
  await withClient(adminUrl, async (client) => {
    await client.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK_KEY]);
    try {
      const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (exists.rowCount) return;
      const building = `${name}_building`;
      await client.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
      await client.query(`CREATE DATABASE ${building}`);
      const url = databaseUrl(adminUrl, building);
      await migrate(url);
      const boss = createBoss(url, loadConfig({}));
      await boss.start();
      await ensureQueues(boss, loadConfig({}));
      await boss.stop({ graceful: false });
      await client.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK_KEY]);
    }
  });
  return name;
}

function schemaFingerprint(): string {
  const hash = createHash('sha256');
  const sqlDir = path.join(import.meta.dirname, '..', '..', 'sql');
  for (const file of readdirSync(sqlDir).sort()) hash.update(file).update(readFileSync(path.join(sqlDir, file)));
  hash.update(readFileSync(path.join(import.meta.dirname, '..', '..', 'src', 'queue.ts')));
  return hash.digest('hex').slice(0, 12);
}

function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}
