/**
 * What the benchmarks that start the real service share: cleaning up on every way out, databases of
 * their own, the service's processes as children, accounts with keys, uploads, phone-like photos and
 * the tables they print.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, open, readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import sharp from 'sharp';
import { type Agent, request } from 'undici';
import { createAccount } from '../src/accounts/accounts.ts';
import { createApiKey } from '../src/accounts/api-keys.ts';
import { createPlan } from '../src/accounts/plans.ts';
import { loadConfig } from '../src/config.ts';
import { createDatabase, type Db } from '../src/db/database.ts';
import { startEmbeddedPostgres } from '../src/db/embedded.ts';
import { addWebhookEndpoint } from '../src/webhooks/endpoints.ts';
import { freePort } from '../test/helpers/ports.ts';
import { adminQuery } from './admin.ts';

export const root = path.join(import.meta.dirname, '..');
export const resultsDir = path.join(import.meta.dirname, 'results');
export const SHARED_DATASETS = path.join(root, '..', 'shared', 'datasets');

/** Something to undo, or a group of them (a configuration's) undone in their own order. */
type Cleanup = (() => Promise<unknown>) | Cleanups;

/** Long enough for a service process's shutdown grace (25 s) or the DROP of a database that holds 2 000 photos. */
const CLEANUP_TIMEOUT_MS = 60_000;

/** Things to undo, the last added first; each runs once. */
export class Cleanups {
  #pending: Cleanup[] = [];
  #running: Promise<void> = Promise.resolve();

  add(cleanup: Cleanup): void {
    this.#pending.push(cleanup);
  }

  /**
   * Ends only when every cleanup has: a second call (Ctrl-C's, while the benchmark's own `finally` is cleaning up)
   * waits for the first, so that the process does not exit with a database still to drop.
   */
  run(): Promise<void> {
    this.#running = this.#running.then(() => this.#runPending());
    return this.#running;
  }

  /**
   * One cleanup that hangs must not keep the rest (the databases dropped, the scratch folders removed) from running:
   * each is given CLEANUP_TIMEOUT_MS, and the timer keeps the process alive while it waits.
   */
  async #runPending(): Promise<void> {
    for (const cleanup of this.#pending.splice(0).reverse()) {
      if (cleanup instanceof Cleanups) {
        await cleanup.run();
        continue;
      }
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          const what = cleanup.toString().replace(/\s+/g, ' ').slice(0, 80);
          console.error(`cleanup: ${what} did not end within ${CLEANUP_TIMEOUT_MS} ms; going on`);
          resolve();
        }, CLEANUP_TIMEOUT_MS);
      });
      // Called inside an async function: one that throws before it returns a promise is logged like the others.
      const done = (async () => cleanup())().catch((error) => console.error(`cleanup: ${error}`));
      await Promise.race([done, timedOut]);
      clearTimeout(timer);
    }
  }
}

/** What the benchmark undoes when it ends, fails or is interrupted. */
export const cleanups = new Cleanups();

/**
 * Runs `benchmark`, then the cleanups, also on Ctrl-C (exit 130); a failure is printed and exits 1. A second SIGINT
 * (npm forwards Ctrl-C to a process that has already had it from the terminal) must not end the cleanups half done.
 */
export async function runBenchmark(benchmark: () => Promise<void>): Promise<void> {
  let interrupted = false;
  process.on('SIGINT', () => {
    if (interrupted) return console.error('# SIGINT: already cleaning up (Ctrl-\\ quits at once)');
    interrupted = true;
    void cleanups.run().then(() => process.exit(130));
  });
  try {
    await benchmark();
  } catch (error) {
    // Interrupted, the requests in flight fail as their connections are closed: not worth a stack trace.
    if (!interrupted) console.error(error);
    process.exitCode = 1;
  } finally {
    await cleanups.run();
  }
}

/** The server the benchmark creates its databases on: DATABASE_URL's, or an embedded PostgreSQL under .bench/. */
export async function benchServer(): Promise<string> {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  const embedded = await startEmbeddedPostgres({
    dataDir: path.join(root, '.bench'),
    port: Number(process.env.BENCH_EMBEDDED_PG_PORT ?? 5490),
    role: 'guest',
    log: (message) => console.log(`# ${message}`),
  });
  cleanups.add(() => embedded.stop());
  return embedded.url;
}

/** A new empty database on the server (its role needs CREATEDB); `drop` may be called more than once. */
export async function newDatabase(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `meterlens_bench_${randomBytes(6).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** Every table's pg_total_relation_size (heap, TOAST and indexes) in bytes, by its schema-qualified name. */
export async function tableSizes(db: Db): Promise<Map<string, number>> {
  const { rows } = await sql<{ table: string; bytes: string }>`
    SELECT n.nspname || '.' || c.relname AS table, pg_total_relation_size(c.oid)::text AS bytes
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')`.execute(db);
  return new Map(rows.map((row) => [row.table, Number(row.bytes)]));
}

export interface Child {
  url: string;
  pid: number;
  /** Rejects when the process exits before `stop` was called (it never resolves). */
  died: Promise<never>;
  stop(): Promise<void>;
}

/** How a child is known to be up: the variable its port goes in, and a path that answers 2xx then. */
export interface Readiness {
  portVariable: string;
  path: string;
}

const SERVER_READY: Readiness = { portVariable: 'PORT', path: '/healthz' };

/**
 * A server script as a child process on a free port, its output in bench/results/<name>.log;
 * resolves once it answers. Stopped at cleanup, and killed if this process exits first.
 */
export async function startChild(
  name: string,
  args: string[],
  env: Record<string, string>,
  readiness = SERVER_READY,
): Promise<Child> {
  const port = await freePort();
  await mkdir(resultsDir, { recursive: true });
  const logFile = path.join(resultsDir, `${name}.log`);
  const log = await open(logFile, 'w');
  const child = spawn(process.execPath, args, {
    cwd: root,
    stdio: ['ignore', log.fd, log.fd],
    env: { ...process.env, ...env, [readiness.portVariable]: String(port), HOST: '127.0.0.1' },
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let stopping = false;
  const logName = path.relative(process.cwd(), logFile);
  const died = new Promise<never>((_, reject) => {
    child.once('exit', (code, signal) => {
      process.off('exit', killOnExit);
      if (!stopping) reject(new Error(`the ${name} exited (${signal ?? `code ${code}`}); see ${logName}`));
    });
  });
  died.catch(() => {}); // observed by whoever races it; unobserved, an exit is reported by the readiness wait or not at all
  const stop = async () => {
    stopping = true;
    await stopChild(child);
    await log.close().catch(() => {});
  };
  cleanups.add(stop);
  const url = `http://127.0.0.1:${port}`;
  for (let waited = 0; waited < 60_000; waited += 200) {
    if (child.exitCode !== null) break;
    const ready = await fetch(`${url}${readiness.path}`).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) return { url, pid: child.pid!, died, stop };
    await sleep(200);
  }
  throw new Error(`the ${name} did not become ready; see ${logName}`);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** Accounts on a plan too big to run out, each with an API key (returned) and a webhook endpoint on the receiver. */
export async function createBenchAccounts(databaseUrl: string, webhookUrl: string, names: string[]): Promise<string[]> {
  const db = createDatabase(databaseUrl, 1);
  try {
    await createPlan(db, { code: 'bench', name: 'Benchmark', monthlyRequestLimit: 1_000_000_000 });
    const keys = [];
    for (const name of names) {
      const account = await createAccount(db, { name, planCode: 'bench' });
      keys.push((await createApiKey(db, { accountId: account.id, projectName: 'bench' })).key);
      await addWebhookEndpoint(db, loadConfig({ WEBHOOK_ALLOW_PRIVATE: '1' }), {
        accountId: account.id,
        url: webhookUrl,
        events: ['reading.completed'],
      });
    }
    return keys;
  } finally {
    await db.destroy();
  }
}

/** The multipart body is built once, so the client spends no time encoding it per request. */
export interface Upload {
  body: Buffer;
  contentType: string;
}

export function multipart(photo: Buffer): Upload {
  const boundary = `meterlens-bench-${randomBytes(8).toString('hex')}`;
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="meter.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
    ),
    photo,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** One request; anything but a 2xx fails the run, so a broken service cannot pass for a fast one. */
export async function send(
  client: Agent,
  method: 'GET' | 'POST',
  url: string,
  upload?: { authorization: string; body: Buffer; contentType: string },
): Promise<string> {
  const response = await request(url, {
    method,
    dispatcher: client,
    headers: upload && {
      ...(upload.authorization && { authorization: upload.authorization }),
      'content-type': upload.contentType,
    },
    body: upload?.body,
  });
  const text = await response.body.text();
  if (response.statusCode >= 300) throw new Error(`${method} ${url} answered ${response.statusCode}: ${text}`);
  return text;
}

export async function timed(call: () => Promise<unknown>): Promise<number> {
  const startedAt = performance.now();
  await call();
  return performance.now() - startedAt;
}

/** Nearest-rank percentile. */
export function percentile(samples: number[], rank: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((rank / 100) * sorted.length) - 1)];
}

/** The first `count` photos of a dataset under ../shared/datasets, in its labels.csv's order; none without it. */
export async function datasetPhotos(dataset: string, count: number): Promise<string[]> {
  const labels = path.join(SHARED_DATASETS, dataset, 'labels.csv');
  if (!existsSync(labels)) return [];
  const [, ...rows] = (await readFile(labels, 'utf8')).trim().split('\n');
  return rows.slice(0, count).map((row) => path.join(SHARED_DATASETS, dataset, row.split(',')[0]));
}

/**
 * A JPEG as a phone stores it, from a smaller photo: `width` × `height` pixels as shot (quality 92),
 * stored turned a quarter left with EXIF orientation 6, so that it is upright once turned as the tag
 * says, with sensor-like grain so that it weighs what a phone's photo does (a few MB) rather than
 * what a smooth upscale would.
 */
export async function phoneLikePhoto(source: string | Buffer, width: number, height: number): Promise<Buffer> {
  const raw = { width: height, height: width, channels: 1 } as const;
  const grain = await sharp(randomBytes(width * height), { raw })
    .linear(0.12, 112)
    .raw()
    .toBuffer();
  return sharp(source)
    .rotate(270)
    .resize(height, width, { fit: 'cover' })
    .composite([{ input: grain, raw, blend: 'overlay' }])
    .jpeg({ quality: 92 })
    .withMetadata({ orientation: 6 })
    .toBuffer();
}

export function printTable(title: string, rows: Array<Array<string | number>>): void {
  const cells = rows.map((row) => row.map(String));
  const widths = cells[0].map((_, column) => Math.max(...cells.map((row) => row[column].length)));
  const line = (row: string[]) => `| ${row.map((cell, column) => cell.padStart(widths[column])).join(' | ')} |`;
  console.log(`${title}\n\n${line(cells[0])}\n|${widths.map((width) => `${'-'.repeat(width + 1)}:`).join('|')}|`);
  for (const row of cells.slice(1)) console.log(line(row));
  console.log();
}

export function ms(value: number): string {
  return value.toFixed(1);
}

export function integerOption(raw: string, name: string, minimum: number): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < minimum) {
    console.error(`${name} must be an integer of at least ${minimum}, got "${raw}"`);
    process.exit(2);
  }
  return value;
}
