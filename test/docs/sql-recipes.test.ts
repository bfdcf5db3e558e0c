/**
 * Every ```sql block of the docs (docs/*.md, README.md) holds recipes an operator pastes into psql: each one
 * statement under a one-line `--` comment, a blank line between recipes. This test runs each against a migrated
 * database with a little of everything in it, and fails naming the recipe's comment when one errors or finds
 * nothing in that data. psql variables (`:'reference_id'`) are bound as query parameters.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { createTestDatabase } from '../helpers/database.ts';

const root = path.join(import.meta.dirname, '..', '..');

interface Recipe {
  file: string;
  /** The comment line that says what it answers. */
  title: string;
  sql: string;
}

function docFiles(): string[] {
  const docs = readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => path.join('docs', name));
  return ['README.md', ...docs.sort()];
}

function recipes(): Recipe[] {
  return docFiles().flatMap((file) =>
    [...readFileSync(path.join(root, file), 'utf8').matchAll(/^```sql\n([\s\S]*?)^```$/gm)].flatMap((block) =>
      block[1]!
        .split(/\n\s*\n/)
        .filter((text) => text.trim())
        .map((text) => ({ file, title: text.trim().split('\n')[0]!, sql: text.trim() })),
    ),
  );
}

/** The recipe with each psql variable `:'name'` as a numbered parameter, and the values in their order. */
function bind(sql: string, values: Record<string, string>): { text: string; parameters: string[] } {
  const names: string[] = [];
  const text = sql.replace(/:'(\w+)'/g, (_, name: string) => {
    if (!(name in values)) throw new Error(`it names :'${name}', which this test does not set`);
    if (!names.includes(name)) names.push(name);
    return `$${names.indexOf(name) + 1}`;
  });
  return { text, parameters: names.map((name) => values[name]!) };
}

/**
 * One account with a meter whose history has a reading, a corrected reading and a failure, one submission still
 * waiting, a photo, an open anomaly, a webhook delivery being retried, a read job and this month's usage. Plain
 * SQL, so that it is the schema that is tested, not the code's view of it. The psql variables' values.
 */
async function seed(client: pg.Client): Promise<Record<string, string>> {
  const one = async (sql: string, parameters: unknown[] = []) => (await client.query(sql, parameters)).rows[0];
  const account = await one(`INSERT INTO accounts (name) VALUES ('Waterworks') RETURNING id`);
  await client.query(
    `INSERT INTO subscriptions (account_id, plan_code, status, period_start, period_end)
     VALUES ($1, 'starter', 'active', now() - interval '1 day', now() + interval '29 days')`,
    [account.id],
  );
  await client.query(
    `INSERT INTO api_usage (account_id, month, request_count)
     VALUES ($1, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 4)`,
    [account.id],
  );
  const key = await one(
    `INSERT INTO api_keys (account_id, project_name, key_sha256, display_prefix, display_suffix)
     VALUES ($1, 'recipes', repeat('a', 64), 'meterlens_live_aaaa', 'aaaa') RETURNING id`,
    [account.id],
  );
  const meter = await one(`INSERT INTO meter_points (account_id, external_id) VALUES ($1, 'SN-4711') RETURNING id`, [
    account.id,
  ]);
  const submission = (fields: string, values: string, extra: unknown[] = []) =>
    one(
      `INSERT INTO submissions (account_id, api_key_id, meter_point_id, ${fields})
       VALUES ($1, $2, $3, ${values}) RETURNING id, reference_id`,
      [account.id, key.id, meter.id, ...extra],
    );
  const read = await submission(
    'mode, status, created_at, started_at, finished_at',
    `'sync', 'completed', now() - interval '2 days', now() - interval '2 days', now() - interval '2 days'`,
  );
  const corrected = await submission(
    'mode, status, created_at, started_at, finished_at',
    `'async', 'completed', now() - interval '1 day', now() - interval '1 day', now() - interval '1 day'`,
  );
  const failed = await submission(
    'mode, status, error_code, error_message, needs_review, finished_at',
    `'async', 'failed', 'unreadable', 'No reader could read the dial', true, now()`,
  );
  await submission('mode, status', `'async', 'pending'`);
  const reading = (submissionId: string, value: string, confidence: number, plausibility: string) =>
    client.query(
      `INSERT INTO readings (submission_id, reading, value, confidence, reader, model, escalated, attempts, read_ms,
                             plausibility)
       VALUES ($1, $2, $3, $4, 'local', 'seed', false, '[]', 120, $5)`,
      [submissionId, value, Number(value), confidence, plausibility],
    );
  await reading(read.id, '00606.494', 97, 'ok');
  await reading(corrected.id, '00906.500', 41, 'suspicious');
  await client.query(
    `INSERT INTO reading_corrections (submission_id, reading, value, api_key_id, corrected_by)
     VALUES ($1, '00606.500', 606.5, $2, 'api_key')`,
    [corrected.id, key.id],
  );
  await client.query(
    `INSERT INTO submission_photos (submission_id, original_format, original_bytes, width, height, jpeg)
     VALUES ($1, 'jpeg', 3, 1, 1, '\\xffd8ff')`,
    [corrected.id],
  );
  await client.query(
    `INSERT INTO meter_anomalies (meter_point_id, kind, submission_id, data)
     VALUES ($1, 'stopped', $2, jsonb_build_object('kind', 'stopped', 'since', now() - interval '30 days',
                                                   'reference_id', $3::text, 'figures', '{}'::jsonb))`,
    [meter.id, corrected.id, corrected.reference_id],
  );
  const endpoint = await one(
    `INSERT INTO webhook_endpoints (account_id, url, secret) VALUES ($1, 'https://example.com/hook', 'whsec_seed')
     RETURNING id`,
    [account.id],
  );
  await client.query(
    `INSERT INTO webhook_deliveries (account_id, endpoint_id, submission_id, event_id, event_type, payload, status,
                                     attempt_count, last_status_code, next_attempt_at)
     VALUES ($1, $2, $3, 'msg_seed', 'reading.failed', '{}', 'pending', 2, 500, now() + interval '1 minute')`,
    [account.id, endpoint.id, failed.id],
  );
  await client.query(`INSERT INTO pgboss.job (name, data) VALUES ('read-meter', '{}')`);
  return { reference_id: corrected.reference_id, account_id: account.id, meter_id: 'SN-4711' };
}

t.test('every SQL recipe in the docs runs against the schema and finds the seeded rows', async (t) => {
  const found = recipes();
  t.ok(
    found.some((recipe) => recipe.file === 'docs/operations.md'),
    'the recipes of docs/operations.md are found',
  );
  const database = await createTestDatabase();
  t.teardown(database.drop);
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  t.teardown(() => client.end());
  const values = await seed(client);

  for (const recipe of found) {
    const where = `${recipe.file}: ${recipe.title}`;
    t.match(recipe.title, /^-- \S/, `${where}: starts with a comment that says what it answers`);
    try {
      const { text, parameters } = bind(recipe.sql, values);
      const { rows } = await client.query(text, parameters);
      t.ok(rows.length > 0, `${where}: finds the seeded rows`);
    } catch (error) {
      t.fail(`${where}: ${(error as Error).message}`);
    }
  }
});
