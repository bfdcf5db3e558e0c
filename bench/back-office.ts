/**
 * `node bench/back-office.ts` (needs DATABASE_URL): the back office's queries on an account with
 * 100 000 submissions (1 000 meters over 100 days; every 50th failed, every 10th implausible, every
 * 25th read at confidence 50; what needed review is reviewed except the last 3 days, as a back office
 * that keeps up leaves it; every 20th corrected besides), beside another account of 20 000. For each
 * of the readings list's pages, the review queue's next item (and the navigation's count), the meters
 * list (each meter's readings waiting for review with it) and the billing export, it calls the code's
 * own function, then prints its time (p50 and p95 of SAMPLES calls; the export streamed whole, once)
 * and EXPLAIN (ANALYZE, BUFFERS) of every query the call made, as the code sent it. Then, for
 * comparison, the queue's next item as the rule over the facts would find it without the stored
 * needs_review (before migration 026). Last, the meters list once a review threshold of 100 makes
 * nearly every submission wait (its counts' worst case), with and without the index of each meter's
 * count (before migration 029).
 */
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CompiledQuery, Kysely, PostgresDialect, type SqlBool, sql } from 'kysely';
import pg from 'pg';
import { createSession, findSession } from '../src/accounts/sessions.ts';
import { createUser } from '../src/accounts/users.ts';
import { readingsPage } from '../src/dashboard/readings.ts';
import { nextForReview } from '../src/dashboard/review-queue.ts';
import type { Db } from '../src/db/database.ts';
import type { Database } from '../src/db/schema.ts';
import { billingExport } from '../src/meters/billing-export.ts';
import { meterList } from '../src/meters/meter-list.ts';
import { needsReviewSql, refreshNeedsReview, setReviewSettings } from '../src/meters/review.ts';
import { createTestDatabase } from '../test/helpers/database.ts';
import { createCustomer } from '../test/helpers/service.ts';

/** Thrown to roll a transaction back once its measurement is done. */
class RolledBack extends Error {}

const WARM_UP = 5;
const SAMPLES = 50;
const DAY_SECONDS = 86_400;

const database = await createTestDatabase();
const pool = new pg.Pool({ connectionString: database.url, max: 4 });
/** Every query a measured call makes, as sent: what EXPLAIN is run on. */
let captured: CompiledQuery[] | null = null;
const db = new Kysely<Database>({
  dialect: new PostgresDialect({ pool }),
  log: (event) => {
    if (event.level === 'query') captured?.push(event.query);
  },
});

/** `submissions` over 100 days on 1 000 meters; returns the account id. */
async function seed(submissions: number): Promise<string> {
  const customer = await createCustomer(db);
  const account = customer.accountId;
  await sql`INSERT INTO meter_points (account_id, external_id) SELECT ${account}, 'SN-' || lpad(g::text, 4, '0') FROM generate_series(1, 1000) g`.execute(db);
  await sql`INSERT INTO meters (account_id, api_key_id, mode, status, error_code, error_message, created_at, started_at, finished_at, meter_point_id)
    SELECT ${account}, ${customer.keyId}, 'async', CASE WHEN g % 50 = 0 THEN 'failed' ELSE 'completed' END,
      CASE WHEN g % 50 = 0 THEN 'unreadable' END, CASE WHEN g % 50 = 0 THEN 'No reader found a reading in the photo' END,
      t, t, t, (SELECT id FROM meter_points WHERE account_id = ${account} AND external_id = 'SN-' || lpad((g % 1000 + 1)::text, 4, '0'))
    FROM generate_series(1, ${submissions}::int) g, LATERAL (SELECT now() - g * make_interval(secs => ${(100 * DAY_SECONDS) / submissions})) AS at(t)`.execute(
    db,
  );
  await sql`INSERT INTO readings (meter_id, reading, value, confidence, reader, model, escalated, attempts, read_ms, plausibility)
    SELECT id, lpad((id % 99999)::text, 5, '0') || '.000', id % 99999, CASE WHEN id % 25 = 0 THEN 50 ELSE 95 END, 'local', 'bench', false, '[]', 5,
      CASE WHEN id % 10 = 0 THEN 'implausible' ELSE 'ok' END
    FROM meters WHERE account_id = ${account} AND status = 'completed'`.execute(db);
  // Reviewed: what needed a look, older than 3 days; and every 20th besides.
  await sql`INSERT INTO reading_corrections (meter_id, reading, value, corrected_by)
    SELECT m.id, '00001.000', 1, 'bench' FROM meters m LEFT JOIN readings r ON r.meter_id = m.id
    WHERE m.account_id = ${account}
      AND (m.id % 20 = 0 OR (m.created_at < now() - interval '3 days' AND (m.status = 'failed' OR r.plausibility = 'implausible' OR r.confidence < 90)))`.execute(
    db,
  );
  return account;
}

/** How many readings wait for review on the meters list's first page, all its meters together. */
async function waitingOnFirstPage(account: string): Promise<number> {
  const { meters } = await meterList(db, account, { limit: 100 });
  return meters.reduce((sum, meter) => sum + meter.waitingForReview, 0);
}

async function timed<T>(run: () => Promise<T>): Promise<{ p50: number; p95: number; result: T }> {
  let result = await run();
  for (let i = 1; i < WARM_UP; i++) await run();
  const samples: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const started = performance.now();
    result = await run();
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return { p50: samples[Math.ceil(SAMPLES * 0.5) - 1]!, p95: samples[Math.ceil(SAMPLES * 0.95) - 1]!, result };
}

/**
 * Runs the call once capturing its queries, prints EXPLAIN (ANALYZE, BUFFERS) of each; then times it.
 * `on`: the connection the call runs on, where EXPLAIN must run too (a transaction's).
 */
async function measure<T>(name: string, run: () => Promise<T>, on: Db = db): Promise<T> {
  captured = [];
  await run();
  const queries = captured;
  captured = null;
  const { p50, p95, result } = await timed(run);
  console.log(`\n=== ${name}: p50 ${p50.toFixed(2)} ms, p95 ${p95.toFixed(2)} ms (${SAMPLES} calls)`);
  for (const query of queries) await explain(query, on);
  return result;
}

async function explain(query: CompiledQuery, on: Db = db): Promise<void> {
  const plan = await on.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`EXPLAIN (ANALYZE, BUFFERS) ${query.sql}`, [...query.parameters]));
  console.log(`--- ${query.sql.replace(/\s+/g, ' ').slice(0, 160)}…`);
  for (const row of plan.rows) console.log(row['QUERY PLAN']);
}

try {
  let started = performance.now();
  const account = await seed(100_000);
  await seed(20_000);
  console.log(`seeded 120 000 submissions in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  started = performance.now();
  await refreshNeedsReview(db, { accountId: account });
  console.log(`refreshNeedsReview of the 100 000 (a new review threshold does the same) ${((performance.now() - started) / 1000).toFixed(1)} s`);
  await sql`VACUUM ANALYZE`.execute(db);
  const { rows } = await sql<{ waiting: number; flagged: number }>`SELECT count(*) FILTER (WHERE needs_review)::int AS waiting,
    count(*) FILTER (WHERE status = 'failed' OR EXISTS (SELECT 1 FROM readings r WHERE r.meter_id = meters.id AND (r.plausibility = 'implausible' OR r.confidence < 90)))::int AS flagged
    FROM meters WHERE account_id = ${account}`.execute(db);
  console.log(`the account: 100 000 submissions, ${rows[0]!.flagged} ever needed review, ${rows[0]!.waiting} wait now`);

  const deep = await db
    .selectFrom('meters')
    .select('reference_id')
    .where('account_id', '=', account)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .offset(50_000)
    .limit(1)
    .executeTakeFirstOrThrow();
  await measure('readings list, first page (100 rows and the total)', () => readingsPage(db, account, {}, undefined));
  await measure('readings list, the page after the 50 000th', () => readingsPage(db, account, {}, deep.reference_id));
  await measure('readings list, needs review, first page', () => readingsPage(db, account, { needsReview: true }, undefined));
  await measure('readings list, one meter, first page', () => readingsPage(db, account, { meterId: 'SN-0500' }, undefined));

  const first = await measure('review queue, next item from the oldest', () => nextForReview(db, account, undefined));
  await measure('review queue, next item after a skip', () => nextForReview(db, account, first!.referenceId));
  const user = await createUser(db, { accountId: account, email: 'bench@example.com', password: 'correct horse battery' });
  const session = await createSession(db, user.id);
  await measure('session with the navigation’s review count (every dashboard request)', () => findSession(db, session.token));

  console.log(`\nthe first page's meters: ${await waitingOnFirstPage(account)} readings waiting for review`);
  await measure('meters list, first page of 100', () => meterList(db, account, { limit: 100 }));
  await measure('meters list, a page after SN-0500', () => meterList(db, account, { limit: 100, startingAfter: 'SN-0500' }));
  await measure('meters list, prefix SN-05', () => meterList(db, account, { limit: 100, prefix: 'SN-05' }));

  // The export: its first and last batch explained, the whole stream timed once.
  captured = [];
  started = performance.now();
  let bytes = 0;
  await pipeline(
    billingExport(db, account, {}),
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        bytes += chunk.length;
        done();
      },
    }),
  );
  const batches = captured;
  captured = null;
  console.log(
    `\n=== billing export, 100 000 rows (${(bytes / 1e6).toFixed(1)} MB) in ${batches.length} batches: ${((performance.now() - started) / 1000).toFixed(2)} s`,
  );
  await explain(batches[0]!);
  await explain(batches.at(-2)!);

  // Without the stored flag: the oldest submission that needs review by the rule over its facts.
  const byTheFacts = sql<SqlBool>`m.status IN ('completed', 'failed') AND ${needsReviewSql({
    status: sql`m.status`,
    plausibility: sql`r.plausibility`,
    confidence: sql`r.confidence`,
    reviewBelow: sql`(SELECT review_below FROM accounts WHERE id = m.account_id)`,
    byPerson: sql`(m.mode = 'manual' OR EXISTS (SELECT 1 FROM reading_corrections WHERE meter_id = m.id))`,
  })}`;
  await measure('for comparison: the next item by the rule over the facts, without the stored flag', () =>
    db
      .selectFrom('meters as m')
      .leftJoin('readings as r', 'r.meter_id', 'm.id')
      .select('m.reference_id')
      .where('m.account_id', '=', account)
      .where(byTheFacts)
      .orderBy('m.created_at')
      .orderBy('m.id')
      .limit(1)
      .execute(),
  );

  // The counts' worst case: a review threshold of 100 makes every reading no person reviewed wait.
  started = performance.now();
  await setReviewSettings(db, account, { reviewBelow: 100 });
  console.log(`\nreview threshold 100: refreshNeedsReview of the 100 000 in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  await sql`VACUUM ANALYZE meters`.execute(db);
  console.log(`the first page's meters: ${await waitingOnFirstPage(account)} readings waiting for review`);
  await measure('meters list, first page of 100, nearly every submission waiting', () => meterList(db, account, { limit: 100 }));
  // And without the index of each meter's count: dropped in a transaction that is rolled back.
  await db
    .transaction()
    .execute(async (tx) => {
      await sql`DROP INDEX meters_meter_point_review`.execute(tx);
      await measure('for comparison: the same without meters_meter_point_review', () => meterList(tx, account, { limit: 100 }), tx);
      throw new RolledBack();
    })
    .catch((error: unknown) => {
      if (!(error instanceof RolledBack)) throw error;
    });
} finally {
  await db.destroy();
  await database.drop();
}
