/**
 * `node bench/back-office.ts` (needs DATABASE_URL): the back office's queries on a large account.
 * By default, an account with 100 000 submissions (1 000 meters over 100 days; every 50th failed,
 * every 10th implausible, every 25th read at confidence 50; what needed review is reviewed except the
 * last 3 days, as a back office that keeps up leaves it; every 20th corrected besides), beside another
 * account of 20 000. The options seed other shapes (see SHAPE): `--accounts 50 --submissions 1000000
 * --meters 5000 --account-submissions 200000` is issue 48's. For each of the readings list's pages, a
 * meter's history, the review queue's next item (and the navigation's count), the meters list (each
 * meter's readings waiting for review with it), the usage check every submission makes and the billing
 * export, it calls the code's own function, then prints its time (p50 and p95 of SAMPLES calls; the
 * export streamed whole, once) and EXPLAIN (ANALYZE, BUFFERS) of every query the call made, as the
 * code sent it. Then, for comparison, the queue's next item as the rule over the facts would find it
 * without the stored needs_review (before migration 026). Last, the meters list once a review
 * threshold of 100 makes nearly every submission wait (its counts' worst case), with and without the
 * index of each meter's count (before migration 029).
 */
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { CompiledQuery, Kysely, PostgresDialect, type SqlBool, sql } from 'kysely';
import pg from 'pg';
import { createSession, findSession } from '../src/accounts/sessions.ts';
import { createUser } from '../src/accounts/users.ts';
import { readingsPage } from '../src/dashboard/readings.ts';
import { nextForReview } from '../src/dashboard/review-queue.ts';
import { loadConfig } from '../src/config.ts';
import type { Db } from '../src/db/database.ts';
import type { Database } from '../src/db/schema.ts';
import { billingExport } from '../src/meters/billing-export.ts';
import { meterHistory } from '../src/meters/history.ts';
import { meterList } from '../src/meters/meter-list.ts';
import { needsReviewSql, refreshNeedsReview, setReviewSettings } from '../src/meters/review.ts';
import { authenticate } from '../src/pipeline/authenticate.ts';
import { checkSubscription } from '../src/pipeline/check-subscription.ts';
import { reserveUsage } from '../src/pipeline/check-usage.ts';
import { createBoss } from '../src/queue.ts';
import { createTestDatabase } from '../test/helpers/database.ts';
import { type Customer, createCustomer } from '../test/helpers/service.ts';

/** Thrown to roll a transaction back once its measurement is done. */
class RolledBack extends Error {}

const WARM_UP = 5;
const SAMPLES = 50;
const DAY_SECONDS = 86_400;

/**
 * What is seeded: `accounts` accounts with `submissions` over `meters` meters in all, of which the
 * measured account has `account-submissions` over `account-meters`. The others share the rest as
 * accounts' sizes fall in practice, the k-th largest 1/k of the largest (Zipf), each its meters in
 * the same proportion (at least one). The defaults are the measured account and one other of 20 000.
 */
const { values: options } = parseArgs({
  options: {
    accounts: { type: 'string', default: '2' },
    submissions: { type: 'string', default: '120000' },
    meters: { type: 'string', default: '2000' },
    'account-submissions': { type: 'string', default: '100000' },
    'account-meters': { type: 'string', default: '1000' },
  },
});
const SHAPE = {
  accounts: positive('accounts'),
  submissions: positive('submissions'),
  meters: positive('meters'),
  accountSubmissions: positive('account-submissions'),
  accountMeters: positive('account-meters'),
};
if (
  SHAPE.accountSubmissions > SHAPE.submissions ||
  SHAPE.accountMeters > SHAPE.meters ||
  Math.max(SHAPE.accountMeters, ...otherAccounts().map(([, meters]) => meters)) > 9999
) {
  throw new Error(
    'the measured account is part of the totals, and an account has at most 9 999 meters (SN-0001…SN-9999)',
  );
}

function positive(name: keyof typeof options): number {
  const value = Number(options[name]);
  if (!Number.isSafeInteger(value) || value < 1)
    throw new Error(`--${name} must be a positive whole number, not ${options[name]}`);
  return value;
}

/** The other accounts' [submissions, meters], largest first. */
function otherAccounts(): Array<[number, number]> {
  const others = SHAPE.accounts - 1;
  const harmonic = Array.from({ length: others }, (_, k) => 1 / (k + 1)).reduce((sum, share) => sum + share, 0);
  return Array.from({ length: others }, (_, k) => {
    const share = 1 / (k + 1) / harmonic;
    return [
      Math.max(1, Math.round((SHAPE.submissions - SHAPE.accountSubmissions) * share)),
      Math.max(1, Math.round((SHAPE.meters - SHAPE.accountMeters) * share)),
    ];
  });
}

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

/** A new account with `submissions` over 100 days on `meters` meters, set-based. */
async function seed(submissions: number, meters: number): Promise<Customer> {
  // A plan no submission here reaches, so the usage check never refuses nor announces a milestone.
  const customer = await createCustomer(db, { monthlyLimit: 2_000_000_000 });
  const account = customer.accountId;
  await sql`INSERT INTO meter_points (account_id, external_id) SELECT ${account}, 'SN-' || lpad(g::text, 4, '0') FROM generate_series(1, ${meters}::int) g`.execute(
    db,
  );
  await sql`WITH points AS (SELECT array_agg(id ORDER BY external_id) AS ids FROM meter_points WHERE account_id = ${account})
    INSERT INTO submissions (account_id, api_key_id, mode, status, error_code, error_message, created_at, started_at, finished_at, meter_point_id)
    SELECT ${account}, ${customer.keyId}, 'async', CASE WHEN g % 50 = 0 THEN 'failed' ELSE 'completed' END,
      CASE WHEN g % 50 = 0 THEN 'unreadable' END, CASE WHEN g % 50 = 0 THEN 'No reader found a reading in the photo' END,
      t, t, t, points.ids[g % ${meters}::int + 1]
    FROM points, generate_series(1, ${submissions}::int) g, LATERAL (SELECT now() - g * make_interval(secs => ${(100 * DAY_SECONDS) / submissions})) AS at(t)`.execute(
    db,
  );
  await sql`INSERT INTO readings (submission_id, reading, value, confidence, reader, model, escalated, attempts, read_ms, plausibility)
    SELECT id, lpad((id % 99999)::text, 5, '0') || '.000', id % 99999, CASE WHEN id % 25 = 0 THEN 50 ELSE 95 END, 'local', 'bench', false, '[]', 5,
      CASE WHEN id % 10 = 0 THEN 'implausible' ELSE 'ok' END
    FROM submissions WHERE account_id = ${account} AND status = 'completed'`.execute(db);
  // Reviewed: what needed a look, older than 3 days; and every 20th besides.
  await sql`INSERT INTO reading_corrections (submission_id, reading, value, corrected_by)
    SELECT m.id, '00001.000', 1, 'bench' FROM submissions m LEFT JOIN readings r ON r.submission_id = m.id
    WHERE m.account_id = ${account}
      AND (m.id % 20 = 0 OR (m.created_at < now() - interval '3 days' AND (m.status = 'failed' OR r.plausibility = 'implausible' OR r.confidence < 90)))`.execute(
    db,
  );
  // What the usage check counts: the account's accepted submissions of each month.
  await sql`INSERT INTO api_usage (account_id, month, request_count)
    SELECT account_id, date_trunc('month', created_at AT TIME ZONE 'UTC')::date, count(*) FROM submissions WHERE account_id = ${account} GROUP BY 1, 2`.execute(
    db,
  );
  return customer;
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
  // A transaction's BEGIN and COMMIT are logged as queries too; there is nothing in them to explain.
  for (const query of queries) if (!/^(begin|commit|rollback)\b/i.test(query.sql)) await explain(query, on);
  return result;
}

async function explain(query: CompiledQuery, on: Db = db): Promise<void> {
  const plan = await on.executeQuery<{ 'QUERY PLAN': string }>(
    CompiledQuery.raw(`EXPLAIN (ANALYZE, BUFFERS) ${query.sql}`, [...query.parameters]),
  );
  console.log(`--- ${query.sql.replace(/\s+/g, ' ').slice(0, 160)}…`);
  for (const row of plan.rows) console.log(row['QUERY PLAN']);
}

const count = (n: number) => n.toLocaleString('en-US').replaceAll(',', ' ');

try {
  let started = performance.now();
  const customer = await seed(SHAPE.accountSubmissions, SHAPE.accountMeters);
  const account = customer.accountId;
  const others: string[] = [];
  for (const [submissions, meters] of otherAccounts()) others.push((await seed(submissions, meters)).accountId);
  const { rows: seeded } = await sql<{
    submissions: number;
    meters: number;
  }>`SELECT (SELECT count(*) FROM submissions)::int AS submissions, (SELECT count(*) FROM meter_points)::int AS meters`.execute(
    db,
  );
  console.log(
    `seeded ${count(seeded[0]!.submissions)} submissions over ${count(seeded[0]!.meters)} meters and ${SHAPE.accounts} accounts in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  started = performance.now();
  await refreshNeedsReview(db, { accountId: account });
  console.log(
    `refreshNeedsReview of the measured account's ${count(SHAPE.accountSubmissions)} (a new review threshold does the same) ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  for (const other of others) await refreshNeedsReview(db, { accountId: other });
  await sql`VACUUM ANALYZE`.execute(db);
  const { rows } = await sql<{
    waiting: number;
    flagged: number;
  }>`SELECT count(*) FILTER (WHERE needs_review)::int AS waiting,
    count(*) FILTER (WHERE status = 'failed' OR EXISTS (SELECT 1 FROM readings r WHERE r.submission_id = submissions.id AND (r.plausibility = 'implausible' OR r.confidence < 90)))::int AS flagged
    FROM submissions WHERE account_id = ${account}`.execute(db);
  console.log(
    `the measured account: ${count(SHAPE.accountSubmissions)} submissions, ${rows[0]!.flagged} ever needed review, ${rows[0]!.waiting} wait now`,
  );

  const middle = Math.floor(SHAPE.accountSubmissions / 2);
  const deep = await db
    .selectFrom('submissions')
    .select('reference_id')
    .where('account_id', '=', account)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .offset(middle)
    .limit(1)
    .executeTakeFirstOrThrow();
  await measure('readings list, first page (100 rows and the total)', () => readingsPage(db, account, {}, undefined));
  await measure(`readings list, the page after the ${count(middle)}th`, () =>
    readingsPage(db, account, {}, deep.reference_id),
  );
  await measure('readings list, needs review, first page', () =>
    readingsPage(db, account, { needsReview: true }, undefined),
  );
  await measure('readings list, one meter, first page', () =>
    readingsPage(db, account, { meterId: 'SN-0500' }, undefined),
  );

  const history = await measure('a meter’s history (GET /api/meters/{meter_id}/readings), first page of 100', () =>
    meterHistory(db, account, 'SN-0500', { limit: 100 }),
  );
  if (history?.nextBefore) {
    const before = history.nextBefore;
    await measure('a meter’s history, the next page of 100', () =>
      meterHistory(db, account, 'SN-0500', { limit: 100, before }),
    );
  }

  // The usage check of every submission: the statement that loads this month's count with the key
  // (steps 1–3), then the count that decides, in the transaction that accepts the submission.
  const authorization = `Bearer ${customer.key}`;
  const key = await measure(
    'usage check: key, subscription, plan and this month’s usage (authenticate, every request)',
    () => authenticate(db, authorization),
  );
  const plan = checkSubscription(key.subscription);
  const boss = createBoss(database.url, loadConfig({}), { supervise: false });
  await boss.start();
  try {
    await measure('usage check: the count that decides (reserveUsage, in the accepting transaction)', () =>
      db.transaction().execute((tx) => reserveUsage(tx, boss, account, plan)),
    );
  } finally {
    await boss.stop({ graceful: false });
  }

  const first = await measure('review queue, next item from the oldest', () => nextForReview(db, account, undefined));
  await measure('review queue, next item after a skip', () => nextForReview(db, account, first!.referenceId));
  const user = await createUser(db, {
    accountId: account,
    email: 'bench@example.com',
    password: 'correct horse battery',
  });
  const session = await createSession(db, user.id);
  await measure('session with the navigation’s review count (every dashboard request)', () =>
    findSession(db, session.token),
  );

  console.log(`\nthe first page's meters: ${await waitingOnFirstPage(account)} readings waiting for review`);
  await measure('meters list, first page of 100', () => meterList(db, account, { limit: 100 }));
  await measure('meters list, a page after SN-0500', () =>
    meterList(db, account, { limit: 100, startingAfter: 'SN-0500' }),
  );
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
    `\n=== billing export, ${count(SHAPE.accountSubmissions)} rows (${(bytes / 1e6).toFixed(1)} MB) in ${batches.length} batches: ${((performance.now() - started) / 1000).toFixed(2)} s`,
  );
  await explain(batches[0]!);
  await explain(batches.at(-2)!);

  // Without the stored flag: the oldest submission that needs review by the rule over its facts.
  const byTheFacts = sql<SqlBool>`m.status IN ('completed', 'failed') AND ${needsReviewSql({
    status: sql`m.status`,
    plausibility: sql`r.plausibility`,
    confidence: sql`r.confidence`,
    reviewBelow: sql`(SELECT review_below FROM accounts WHERE id = m.account_id)`,
    wholeUnitsAgreed: sql`r.whole_units_agreed`,
    byPerson: sql`(m.mode = 'manual' OR EXISTS (SELECT 1 FROM reading_corrections WHERE submission_id = m.id))`,
  })}`;
  await measure('for comparison: the next item by the rule over the facts, without the stored flag', () =>
    db
      .selectFrom('submissions as m')
      .leftJoin('readings as r', 'r.submission_id', 'm.id')
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
  console.log(
    `\nreview threshold 100: refreshNeedsReview of the ${count(SHAPE.accountSubmissions)} in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  await sql`VACUUM ANALYZE submissions`.execute(db);
  console.log(`the first page's meters: ${await waitingOnFirstPage(account)} readings waiting for review`);
  await measure('meters list, first page of 100, nearly every submission waiting', () =>
    meterList(db, account, { limit: 100 }),
  );
  // And without the index of each meter's count: dropped in a transaction that is rolled back.
  await db
    .transaction()
    .execute(async (tx) => {
      await sql`DROP INDEX submissions_meter_point_review`.execute(tx);
      await measure(
        'for comparison: the same without submissions_meter_point_review',
        () => meterList(tx, account, { limit: 100 }),
        tx,
      );
      throw new RolledBack();
    })
    .catch((error: unknown) => {
      if (!(error instanceof RolledBack)) throw error;
    });
} finally {
  await db.destroy();
  await database.drop();
}
