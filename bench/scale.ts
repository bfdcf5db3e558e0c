/**
 * `npm run bench:scale`: how reads scale with worker and web processes (issue 48). For each
 * configuration, a fresh database, N `meterlens web` and M `meterlens worker` processes with the
 * local reader, a backlog of phone-size photos sent as fast as the webs ack it, then read: reads a
 * second (per core, per worker), the CPU each read costs PostgreSQL, the workers and the webs, a probe's
 * ack latency meanwhile, and the bytes and WAL each submission costs the database. bench/README.md
 * explains the numbers.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/scale.ts \
 *     [--workers 1,2,4] [--webs 1,2] [--photos database,bucket] [--backlog 2000] [--json]
 */
import { execFile, execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs, promisify } from 'node:util';
import { sql } from 'kysely';
import sharp from 'sharp';
import { Agent } from 'undici';
import { loadConfig } from '../src/config.ts';
import { createDatabase, type Db } from '../src/db/database.ts';
import { startTestBucket } from '../test/helpers/bucket.ts';
import { startWebhookReceiver } from '../test/fakes/webhook-receiver.ts';
import {
  benchServer,
  type Child,
  Cleanups,
  cleanups,
  createBenchAccounts,
  datasetPhotos,
  integerOption,
  ms,
  multipart,
  newDatabase,
  percentile,
  phoneLikePhoto,
  printTable,
  root,
  runBenchmark,
  send,
  SHARED_DATASETS,
  startChild,
  tableSizes,
  timed,
  type Upload,
} from './harness.ts';

/** Photos sent at once to the webs (spread over them): enough to keep them acking, few enough to be a client's. */
const SENDERS = 4;
const PROBE_INTERVAL_MS = 1000;
/** Distinct photos per dataset; the backlog cycles through them. */
const PHOTOS_PER_DATASET = 12;
/** What phones store, as shot (width × height of the landscape frame): 12, 8, 5 and 3 MP, taken in turn. */
const PHONE_FRAMES = [
  [4032, 3024],
  [3264, 2448],
  [2592, 1944],
  [2048, 1536],
] as const;
/** Photos read before the measurement, per worker process: loads each reader's sessions, warms the pools. */
const WARMUP_PER_WORKER = 4;
/** No ack and no read for this long fails the run rather than waiting for ever. */
const STALL_MS = 120_000;
/** How often the database is asked whether the backlog is read. */
const POLL_MS = 500;
const PHOTO_STORES = ['database', 'bucket'] as const;

type PhotoStore = (typeof PHOTO_STORES)[number];

interface Configuration {
  photos: PhotoStore;
  webs: number;
  workers: number;
}

interface Sizes {
  /** When they were taken, by the database's clock. */
  at: Date;
  database: number;
  wal: string;
  submissions: number;
}

const { values: args } = parseArgs({
  options: {
    workers: { type: 'string', default: '1,2,4' },
    webs: { type: 'string', default: '1,2' },
    photos: { type: 'string', default: PHOTO_STORES.join(',') },
    backlog: { type: 'string', default: '2000' },
    json: { type: 'boolean', default: false },
  },
});
const options = {
  workers: integerList(args.workers, '--workers'),
  webs: integerList(args.webs, '--webs'),
  photos: photoStores(args.photos),
  backlog: integerOption(args.backlog, '--backlog', 1),
  json: args.json,
};
/** The workers' settings: they inherit this environment. */
const workerSettings = loadConfig();
/** Backlog accounts enough that their read shares fill every read slot of the most workers measured. */
const BACKLOG_ACCOUNTS = Math.ceil(
  (Math.max(...options.workers) * workerSettings.workerConcurrency) / workerSettings.readAccountConcurrency,
);
const CLOCK_TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));
const progress = (message: string) => console.error(`# ${message}`);

await runBenchmark(benchmark);

async function benchmark(): Promise<void> {
  const adminUrl = await benchServer();
  const photos = await phonePhotos(Math.min(2 * PHOTOS_PER_DATASET, options.backlog));
  const receiver = await startWebhookReceiver();
  cleanups.add(() => receiver.close());
  const client = new Agent({ connections: SENDERS + 4 });
  cleanups.add(() => client.close());
  const machine = {
    cpus: os.cpus().length,
    model: os.cpus()[0]?.model,
    node: process.version,
    postgres: await serverVersion(adminUrl),
  };
  progress(
    `${machine.cpus} CPUs (${machine.model}), node ${machine.node}, ${machine.postgres}; ${photos.description}; ` +
      `backlog of ${options.backlog} over ${BACKLOG_ACCOUNTS} accounts, ${SENDERS} senders`,
  );
  const rows = [];
  try {
    for (const store of options.photos)
      for (const webs of options.webs)
        for (const workers of options.workers) {
          const configuration = { photos: store, webs, workers };
          progress(`${store}, ${webs} web, ${workers} worker: starting`);
          rows.push(await measureConfiguration(configuration, { adminUrl, photos: photos.uploads, receiver, client }));
        }
  } finally {
    if (options.json)
      console.log(JSON.stringify({ date: new Date().toISOString(), machine, photos: photos.description, rows }));
    else if (rows.length > 0) printRows(rows);
  }
}

interface Shared {
  adminUrl: string;
  photos: Upload[];
  receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  client: Agent;
}

/** One configuration, from a fresh database to its drained backlog; everything it started is stopped after. */
async function measureConfiguration(configuration: Configuration, shared: Shared) {
  const scope = new Cleanups();
  cleanups.add(scope);
  try {
    const database = await newDatabase(shared.adminUrl);
    scope.add(database.drop);
    await migrate(database.url);
    const env = {
      DATABASE_URL: database.url,
      READER_CHAIN: 'local',
      WEBHOOK_ALLOW_PRIVATE: '1',
      LOG_LEVEL: 'warn',
      ...(configuration.photos === 'bucket'
        ? (await startTestBucket({ teardown: (close) => scope.add(close) })).env
        : {}),
    };
    const accountNames = [...Array.from({ length: BACKLOG_ACCOUNTS }, (_, i) => `Backlog ${i + 1}`), 'Probe'];
    const keys = await createBenchAccounts(database.url, `${shared.receiver.url}/webhook`, accountNames);
    const processes = await startProcesses(configuration, env, scope);
    const db = createDatabase(database.url, 2);
    scope.add(() => db.destroy());
    const stopped = { value: false };
    scope.add(async () => (stopped.value = true));
    const anyDied = Promise.race(processes.all.map((child) => child.died));
    return await Promise.race([
      anyDied,
      drain(configuration, { ...shared, db, processes, stopped, probeKey: keys.pop()!, backlogKeys: keys }),
    ]);
  } finally {
    await scope.run();
  }
}

async function migrate(databaseUrl: string): Promise<void> {
  await promisify(execFile)(process.execPath, [path.join('src', 'cli.ts'), 'migrate'], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: databaseUrl },
  });
}

/**
 * The webs (each on its own port) and the workers (each serving /metrics, how it is known to be up), as the Procfile
 * runs them.
 */
async function startProcesses(configuration: Configuration, env: Record<string, string>, scope: Cleanups) {
  const start = (role: 'web' | 'worker', count: number) =>
    Promise.all(
      Array.from({ length: count }, (_, i) =>
        startChild(
          `scale-${role}-${i + 1}`,
          [path.join('src', 'cli.ts'), role],
          env,
          role === 'web' ? undefined : { portVariable: 'METRICS_PORT', path: '/metrics' },
        ),
      ),
    );
  const [webs, workers] = await Promise.all([start('web', configuration.webs), start('worker', configuration.workers)]);
  const all = [...webs, ...workers];
  for (const child of all) scope.add(child.stop);
  return { webs, workers, all };
}

interface Run extends Shared {
  db: Db;
  processes: { webs: Child[]; workers: Child[]; all: Child[] };
  stopped: { value: boolean };
  probeKey: string;
  backlogKeys: string[];
}

type Submit = (index: number, key: string) => Promise<string>;

/**
 * Warm-up, then the backlog read while a probe is acked every PROBE_INTERVAL_MS; the CPU of the
 * server, the workers and the webs is taken on either side, and what the submissions left in the database.
 */
async function drain(configuration: Configuration, run: Run) {
  const webs = run.processes.webs.map((web) => `${web.url}/api/meter-reading`);
  const submit: Submit = (index, key) =>
    send(run.client, 'POST', webs[index % webs.length], {
      authorization: `Bearer ${key}`,
      ...run.photos[index % run.photos.length],
    });
  const empty = await tableSizes(run.db);
  await Promise.all(
    Array.from({ length: WARMUP_PER_WORKER * configuration.workers }, (_, i) => submit(i, run.probeKey)),
  );
  await waitUntilRead(run, 0);

  const cpu = await cpuMeter(run);
  const before = { sizes: await sizes(run.db), cpu: await cpu() };
  const sent = await sendWhileProbing(run, submit);
  const after = { cpu: await cpu(), at: await databaseClock(run.db) };
  await waitUntilRead(run, options.backlog);
  const window = await drainWindow(run.db);
  const between = await activity(run.db, before.sizes.at, after.at);
  const bytes = await bytesPerSubmission(run, empty, before.sizes);
  const cpuMs = (of: keyof typeof before.cpu, per: number) => {
    const [start, end] = [before.cpu[of], after.cpu[of]];
    return start === undefined || end === undefined ? undefined : ((end - start) * 1000) / per;
  };
  const readsPerSecond = window.reads / window.seconds;
  progress(
    `${configuration.photos}, ${configuration.webs} web, ${configuration.workers} worker: ${window.reads} reads ` +
      `(${window.failed} of the backlog failed) in ${window.seconds.toFixed(1)} s, ${readsPerSecond.toFixed(2)} reads/s`,
  );
  return {
    ...configuration,
    backlog: options.backlog,
    acksPerSecond: options.backlog / sent.seconds,
    drainSeconds: window.seconds,
    reads: window.reads,
    failed: window.failed,
    readsPerSecond,
    readsPerSecondPerCore: readsPerSecond / os.cpus().length,
    readsPerSecondPerWorker: readsPerSecond / configuration.workers,
    postgresCpuMsPerRead: cpuMs('postgres', between.reads),
    workerCpuMsPerRead: cpuMs('workers', between.reads),
    webCpuMsPerAck: cpuMs('webs', between.acks),
    probeAckWhileSentMs: sent.probes.filter((probe) => probe.whileSending).map((probe) => probe.ms),
    probeAckWhileReadMs: sent.probes.filter((probe) => !probe.whileSending).map((probe) => probe.ms),
    ...bytes,
  };
}

/** CPU seconds so far of the server's processes (undefined when it runs elsewhere), the workers and the webs. */
async function cpuMeter(run: Run) {
  const postgres = await postgresProcesses(run.db);
  return async () => ({
    postgres: postgres && (await cpuSeconds(await postgres())),
    workers: await cpuSeconds(run.processes.workers.map((child) => child.pid)),
    webs: await cpuSeconds(run.processes.webs.map((child) => child.pid)),
  });
}

/**
 * The backlog sent, while a probe photo is submitted every PROBE_INTERVAL_MS, until every backlog
 * photo is read: how long sending took, and each probe's ack (whether sent before the backlog was all acked).
 */
async function sendWhileProbing(run: Run, submit: Submit) {
  const startedAt = performance.now();
  let sentAt = Number.POSITIVE_INFINITY;
  const acks = { count: 0 };
  const probes: Array<Promise<{ whileSending: boolean; ms: number }>> = [];
  let reading = true;
  const probing = (async () => {
    for (let probe = 0; reading && !run.stopped.value; probe++) {
      const whileSending = sentAt === Number.POSITIVE_INFINITY;
      const acked = timed(() => submit(probe, run.probeKey)).then((ms) => ({ whileSending, ms }));
      // Observed by the Promise.all below; until then a refused probe (Ctrl-C stops the webs first) must not end
      // the process as an unhandled rejection, before its cleanups.
      acked.catch(() => {});
      probes.push(acked);
      await sleep(PROBE_INTERVAL_MS);
    }
  })();
  const sending = sendBacklog(run, submit, acks).then(() => (sentAt = performance.now()));
  try {
    await Promise.all([sending, waitUntilRead(run, options.backlog, { probes: false, acks })]);
  } finally {
    reading = false;
  }
  await probing;
  return { seconds: (sentAt - startedAt) / 1000, probes: await Promise.all(probes) };
}

/**
 * The database's growth per submission of the backlog and its probes (size and WAL, dead versions
 * included), then, with the processes stopped and after VACUUM FULL, what the rows hold: the photos'
 * table and all others, over every submission since the tables were empty.
 */
async function bytesPerSubmission(run: Run, empty: Map<string, number>, before: Sizes) {
  const drained = await sizes(run.db);
  const wal = await walBytes(run.db, before.wal, drained.wal);
  for (const child of run.processes.all) await child.stop();
  await sql`VACUUM FULL`.execute(run.db);
  const vacuumed = await tableSizes(run.db);
  const photos = (tables: Map<string, number>) => tables.get('public.submission_photos') ?? 0;
  const others = (tables: Map<string, number>) => sum([...tables.values()]) - photos(tables);
  const live = (bytes: (tables: Map<string, number>) => number) =>
    (bytes(vacuumed) - bytes(empty)) / drained.submissions;
  const submissions = drained.submissions - before.submissions;
  return {
    submissions,
    databaseBytesPerSubmission: (drained.database - before.database) / submissions,
    walBytesPerSubmission: wal / submissions,
    photoBytesPerSubmission: live(photos),
    otherBytesPerSubmission: live(others),
  };
}

/** The backlog, SENDERS photos at a time, spread over the webs and the backlog accounts. */
async function sendBacklog(run: Run, submit: Submit, acks: { count: number }) {
  let next = 0;
  const sender = async () => {
    while (next < options.backlog && !run.stopped.value) {
      const index = next++;
      await submit(index, run.backlogKeys[index % run.backlogKeys.length]);
      acks.count++;
    }
  };
  await Promise.all(Array.from({ length: SENDERS }, sender));
}

/**
 * Resolves once the backlog accounts hold `backlog` submissions, all of them finished (and every
 * probe's too, unless `probes` is false); fails when neither acks nor reads move for STALL_MS.
 */
async function waitUntilRead(run: Run, backlog: number, { probes = true, acks = { count: 0 } } = {}): Promise<void> {
  let progressAt = performance.now();
  let last = '';
  for (;;) {
    const { rows } = await sql<{ backlog: number; backlogWaiting: number; probesWaiting: number; finished: number }>`
      SELECT count(*) FILTER (WHERE a.name <> 'Probe')::int AS backlog,
             count(*) FILTER (WHERE s.finished_at IS NULL AND a.name <> 'Probe')::int AS "backlogWaiting",
             count(*) FILTER (WHERE s.finished_at IS NULL AND a.name = 'Probe')::int AS "probesWaiting",
             count(*) FILTER (WHERE s.finished_at IS NOT NULL)::int AS finished
      FROM submissions s JOIN accounts a ON a.id = s.account_id`.execute(run.db);
    const [counts] = rows;
    const waiting = counts.backlogWaiting + (probes ? counts.probesWaiting : 0);
    if (counts.backlog === backlog && waiting === 0) return;
    const now = `${acks.count} ${counts.finished}`;
    if (now !== last) [last, progressAt] = [now, performance.now()];
    if (performance.now() - progressAt > STALL_MS)
      throw new Error(
        `no ack and no read for ${STALL_MS / 1000} s (${counts.finished} read, ${waiting} waiting); ` +
          'see bench/results/scale-*.log',
      );
    if (run.stopped.value) throw new Error('stopped');
    await sleep(POLL_MS);
  }
}

/**
 * From the first backlog photo's submission to its last's reading, by the database's clock; the reads finished
 * meanwhile.
 */
async function drainWindow(db: Db) {
  const { rows } = await sql<{ seconds: number; reads: number; failed: number }>`
    WITH backlog AS (
      SELECT s.* FROM submissions s JOIN accounts a ON a.id = s.account_id WHERE a.name <> 'Probe'
    ), window_ AS (SELECT min(created_at) AS first, max(finished_at) AS last FROM backlog)
    SELECT extract(epoch FROM last - first)::float8 AS seconds,
           (SELECT count(*) FROM submissions WHERE finished_at BETWEEN first AND last)::int AS reads,
           (SELECT count(*) FROM backlog WHERE status = 'failed')::int AS failed
    FROM window_`.execute(db);
  return rows[0];
}

/** The submissions acked and read between two moments of the database's clock. */
async function activity(db: Db, from: Date, to: Date) {
  const { rows } = await sql<{ acks: number; reads: number }>`
    SELECT count(*) FILTER (WHERE created_at BETWEEN ${from} AND ${to})::int AS acks,
           count(*) FILTER (WHERE finished_at BETWEEN ${from} AND ${to})::int AS reads
    FROM submissions`.execute(db);
  return rows[0];
}

async function databaseClock(db: Db): Promise<Date> {
  const { rows } = await sql<{ now: Date }>`SELECT clock_timestamp() AS now`.execute(db);
  return rows[0].now;
}

async function sizes(db: Db): Promise<Sizes> {
  const { rows } = await sql<{ database: string; wal: string; submissions: number; at: Date }>`
    SELECT pg_database_size(current_database())::text AS database, pg_current_wal_lsn()::text AS wal,
           (SELECT count(*) FROM submissions)::int AS submissions, clock_timestamp() AS at`.execute(db);
  return { ...rows[0], database: Number(rows[0].database) };
}

async function walBytes(db: Db, from: string, to: string): Promise<number> {
  const { rows } = await sql<{ bytes: string }>`SELECT pg_wal_lsn_diff(${to}, ${from})::text AS bytes`.execute(db);
  return Number(rows[0].bytes);
}

/**
 * The server's processes (its postmaster, the parent of our backend, and the postmaster's children),
 * listed afresh on each call; undefined when the server does not run on this machine.
 */
async function postgresProcesses(db: Db): Promise<(() => Promise<number[]>) | undefined> {
  const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db);
  const postmaster = (await processStat(rows[0].pid))?.parent;
  if (postmaster === undefined) return undefined;
  return async () => {
    const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name)).map(Number);
    const stats = await Promise.all(pids.map(async (pid) => ({ pid, stat: await processStat(pid) })));
    return [postmaster, ...stats.filter(({ stat }) => stat?.parent === postmaster).map(({ pid }) => pid)];
  };
}

/**
 * CPU seconds these processes have used, user and system, with those of their children that have
 * exited (a postmaster's ended backends); a process that has ended since counts in its parent's.
 */
async function cpuSeconds(pids: number[]): Promise<number> {
  const stats = await Promise.all(pids.map(processStat));
  return sum(stats.map((stat) => stat?.cpuTicks ?? 0)) / CLOCK_TICKS_PER_SECOND;
}

/** /proc/<pid>/stat (Linux): the parent and utime + stime + cutime + cstime; undefined when it is gone. */
async function processStat(pid: number): Promise<{ parent: number; cpuTicks: number } | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return undefined;
  // After the command name, which may hold spaces and parentheses: state, ppid (4th field), …, utime (14th) to cstime
  // (17th).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { parent: Number(fields[1]), cpuTicks: sum(fields.slice(11, 15).map(Number)) };
}

async function serverVersion(adminUrl: string): Promise<string> {
  const db = createDatabase(adminUrl, 1);
  try {
    const { rows } = await sql<{ version: string }>`SELECT current_setting('server_version') AS version`.execute(db);
    return `PostgreSQL ${rows[0].version}`;
  } finally {
    await db.destroy();
  }
}

/**
 * Photos as phones take them: the first of each dataset under ../shared/datasets, re-encoded at 3 to 12
 * MP (PHONE_FRAMES in turn, upright as shot), or examples/meter.jpg so without them.
 */
async function phonePhotos(count: number): Promise<{ uploads: Upload[]; description: string }> {
  const perDataset = Math.ceil(count / 2);
  const shared = [...(await datasetPhotos('toloka', perDataset)), ...(await datasetPhotos('bdci2020', perDataset))];
  const sources = shared.length > 0 ? shared : [path.join(root, 'examples', 'meter.jpg')];
  if (shared.length === 0) progress(`no photos under ${SHARED_DATASETS}: examples/meter.jpg at phone sizes instead`);
  const photos = [];
  for (const [index, source] of sources.entries()) {
    const [long, short] = PHONE_FRAMES[index % PHONE_FRAMES.length];
    const { width = 1, height = 1 } = await sharp(source).metadata();
    photos.push(await phoneLikePhoto(source, width >= height ? long : short, width >= height ? short : long));
  }
  const megabytes = sum(photos.map((photo) => photo.length)) / photos.length / 1e6;
  const origin =
    shared.length > 0
      ? `${sources.length} photos of ${SHARED_DATASETS} (toloka, bdci2020)`
      : 'examples/meter.jpg (no shared datasets)';
  return {
    uploads: photos.map(multipart),
    description: `${origin} re-encoded as 3–12 MP phone JPEGs (EXIF orientation 6), ${megabytes.toFixed(1)} MB on average`,
  };
}

function printRows(rows: Awaited<ReturnType<typeof measureConfiguration>>[]): void {
  const perSubmission = (bytes: number) => Math.round(bytes).toLocaleString('en-US');
  const optional = (value: number | undefined) => (value === undefined ? 'n/a' : value.toFixed(1));
  const latency = (samples: number[]) =>
    samples.length === 0 ? 'n/a' : `${ms(percentile(samples, 50))} / ${ms(percentile(samples, 99))}`;
  printTable(
    `Backlog of ${options.backlog} photos drained by the local reader (DB, WAL and bytes per submission; CPU per read or ack)`,
    [
      [
        'photos',
        'webs',
        'workers',
        'acks/s',
        'drain s',
        'reads/s',
        'reads/s per core',
        'reads/s per worker',
        'DB CPU ms/read',
        'worker CPU ms/read',
        'web CPU ms/ack',
        'probe ack p50 / p99 ms, sending',
        'probe ack p50 / p99 ms, reading',
        'DB B/submission',
        'WAL B/submission',
        'submission_photos B/submission',
        'other tables B/submission',
      ],
      ...rows.map((row) => [
        row.photos,
        row.webs,
        row.workers,
        row.acksPerSecond.toFixed(1),
        row.drainSeconds.toFixed(1),
        row.readsPerSecond.toFixed(2),
        row.readsPerSecondPerCore.toFixed(2),
        row.readsPerSecondPerWorker.toFixed(2),
        optional(row.postgresCpuMsPerRead),
        optional(row.workerCpuMsPerRead),
        optional(row.webCpuMsPerAck),
        latency(row.probeAckWhileSentMs),
        latency(row.probeAckWhileReadMs),
        perSubmission(row.databaseBytesPerSubmission),
        perSubmission(row.walBytesPerSubmission),
        perSubmission(row.photoBytesPerSubmission),
        perSubmission(row.otherBytesPerSubmission),
      ]),
    ],
  );
}

function integerList(raw: string, name: string): number[] {
  return raw.split(',').map((item) => integerOption(item.trim(), name, 1));
}

function photoStores(raw: string): PhotoStore[] {
  return raw.split(',').map((item) => {
    const store = PHOTO_STORES.find((known) => known === item.trim());
    if (store) return store;
    console.error(`--photos takes ${PHOTO_STORES.join(', ')}, got "${item}"`);
    process.exit(2);
  });
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
