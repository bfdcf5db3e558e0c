/**
 * `node bench/meter-history.ts` (needs DATABASE_URL): what a meter's history costs the read step
 * (the plausibility reference) and the history API, on one meter with 10 000 submissions beside
 * 10 000 of other meters, every 20th corrected. Each row beside `SELECT 1` measured in the same run.
 */
import { sql } from 'kysely';
import { createDatabase } from '../src/db/database.ts';
import { meterHistory } from '../src/meters/history.ts';
import { readContext } from '../src/pipeline/expect-reading.ts';
import { createTestDatabase } from '../test/helpers/database.ts';
import { createCustomer } from '../test/helpers/service.ts';

const WARM_UP = 20;
const SAMPLES = 200;

const database = await createTestDatabase();
const db = createDatabase(database.url);
try {
  const customer = await createCustomer(db);
  const point = await db
    .insertInto('meter_points')
    .values({ account_id: customer.accountId, external_id: 'BENCH' })
    .returning('id')
    .executeTakeFirstOrThrow();
  await sql`INSERT INTO submissions (account_id, api_key_id, mode, status, finished_at, meter_point_id)
    SELECT ${customer.accountId}, ${customer.keyId}, 'async', 'completed', now(), CASE WHEN g % 2 = 0 THEN ${point.id}::bigint END
    FROM generate_series(1, 20000) g`.execute(db);
  await sql`INSERT INTO readings (submission_id, reading, value, confidence, reader, model, escalated, attempts, read_ms, plausibility)
    SELECT id, (id * 0.1)::numeric(12, 3)::text, id * 0.1, 90, 'local', 'bench', false, '[]', 5, 'ok' FROM submissions`.execute(
    db,
  );
  await sql`INSERT INTO reading_corrections (submission_id, reading, value, corrected_by)
    SELECT id, '1', 1, 'bench' FROM submissions WHERE meter_point_id IS NOT NULL AND id % 20 = 0`.execute(db);
  await sql`ANALYZE`.execute(db);
  const newest = await db
    .selectFrom('submissions')
    .select('id')
    .where('meter_point_id', '=', point.id)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirstOrThrow();

  const rows: Array<[string, () => Promise<unknown>]> = [
    ['baseline: SELECT 1', () => sql`SELECT 1`.execute(db)],
    ['plausibility reference and window (readContext)', () => readContext(db, newest.id)],
    ['history, first page of 100', () => meterHistory(db, customer.accountId, 'BENCH', { limit: 100 })],
    [
      'history, a page of 100 deep in the cursor',
      () => meterHistory(db, customer.accountId, 'BENCH', { limit: 100, before: '2000' }),
    ],
  ];
  let baseline = 0;
  for (const [name, run] of rows) {
    for (let i = 0; i < WARM_UP; i++) await run();
    const samples: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const started = performance.now();
      await run();
      samples.push(performance.now() - started);
    }
    samples.sort((a, b) => a - b);
    const p50 = samples[Math.ceil(SAMPLES * 0.5) - 1]!;
    const p95 = samples[Math.ceil(SAMPLES * 0.95) - 1]!;
    baseline ||= p50;
    console.log(
      `${name.padEnd(48)} p50 ${p50.toFixed(2).padStart(6)} ms  p95 ${p95.toFixed(2).padStart(6)} ms  ${(p50 / baseline).toFixed(1)}× baseline`,
    );
  }
} finally {
  await db.destroy();
  await database.drop();
}
