/**
 * `node bench/export.ts` (needs DATABASE_URL): the billing export (`GET /api/meter-readings` as CSV) of
 * an account with 10 000 submissions and of one with 100 000 (1 000 meters, every 10th reading
 * implausible, every 20th corrected), streamed into a sink that counts bytes. Printed: time, rows a
 * second and the process's peak resident memory (maxRSS) after each, beside the peak before any export
 * and, last, one query that holds the 100 000 reference_ids in memory, measured in the same run.
 */
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { sql } from 'kysely';
import { createDatabase, type Db } from '../src/db/database.ts';
import { billingExport } from '../src/meters/billing-export.ts';
import { refreshNeedsReview } from '../src/meters/review.ts';
import { createTestDatabase } from '../test/helpers/database.ts';
import { createCustomer } from '../test/helpers/service.ts';

const database = await createTestDatabase();
const db = createDatabase(database.url);
const peakMb = () => (process.resourceUsage().maxRSS / 1024).toFixed(0);

async function seed(db: Db, submissions: number): Promise<string> {
  const customer = await createCustomer(db);
  await sql`INSERT INTO meter_points (account_id, external_id) SELECT ${customer.accountId}, 'SN-' || g FROM generate_series(1, 1000) g`.execute(
    db,
  );
  await sql`INSERT INTO submissions (account_id, api_key_id, mode, status, created_at, finished_at, meter_point_id)
    SELECT ${customer.accountId}, ${customer.keyId}, 'async', 'completed', now() - g * interval '1 minute', now() - g * interval '1 minute',
      (SELECT id FROM meter_points WHERE account_id = ${customer.accountId} AND external_id = 'SN-' || (g % 1000 + 1))
    FROM generate_series(1, ${submissions}::int) g`.execute(db);
  await sql`INSERT INTO readings (submission_id, reading, value, confidence, reader, model, escalated, attempts, read_ms, plausibility)
    SELECT id, lpad((id % 99999)::text, 5, '0') || '.000', id % 99999, 95, 'local', 'bench', false, '[]', 5,
      CASE WHEN id % 10 = 0 THEN 'implausible' ELSE 'ok' END
    FROM submissions WHERE account_id = ${customer.accountId}`.execute(db);
  await sql`INSERT INTO reading_corrections (submission_id, reading, value, corrected_by)
    SELECT id, '00001.000', 1, 'bench' FROM submissions WHERE account_id = ${customer.accountId} AND id % 20 = 0`.execute(
    db,
  );
  await refreshNeedsReview(db, { accountId: customer.accountId });
  return customer.accountId;
}

async function exportOf(accountId: string): Promise<{ rows: number; bytes: number; ms: number }> {
  let bytes = 0;
  let lines = 0;
  const started = performance.now();
  await pipeline(
    billingExport(db, accountId, {}),
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        bytes += chunk.length;
        for (const byte of chunk) if (byte === 10) lines += 1;
        done();
      },
    }),
  );
  return { rows: lines - 1, bytes, ms: performance.now() - started };
}

try {
  const small = await seed(db, 10_000);
  const large = await seed(db, 100_000);
  await sql`ANALYZE`.execute(db);
  console.log(`baseline: peak RSS before any export ${peakMb()} MB`);
  for (const [name, accountId] of [
    ['export of 10 000', small],
    ['export of 100 000', large],
  ] as const) {
    const { rows, bytes, ms } = await exportOf(accountId);
    console.log(
      `${name}: ${rows} rows, ${(bytes / 1e6).toFixed(1)} MB of CSV in ${(ms / 1000).toFixed(1)} s (${Math.round(rows / (ms / 1000))} rows/s), peak RSS ${peakMb()} MB`,
    );
  }
  // Last: it raises the peak that the exports are measured by.
  const started = performance.now();
  const ids = await db.selectFrom('submissions').select('reference_id').where('account_id', '=', large).execute();
  console.log(
    `baseline: one query of the ${ids.length} reference_ids into memory ${(performance.now() - started).toFixed(0)} ms, peak RSS ${peakMb()} MB`,
  );
} finally {
  await db.destroy();
  await database.drop();
}
