/**
 * The red-team's faults, kept as a suite (`npm run test:faults`, not part of `npm test`): worker
 * SIGKILLs mid-read and mid-delivery, the database refusing connections under load, a receiver
 * down then up, SIGTERM with requests in flight, one account's burst while another submits. Each prints what happened
 * to the submissions and fails on any loss: an accepted meter left unfinished, or a finished one whose webhook never
 * came. Duplicates (the same webhook-id answered 2xx twice) are counted, not failed: delivery is at least
 * once, and a worker killed after the receiver answered but before recording it sends again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.ts';
import { addWebhookEndpoint } from '../../src/webhooks/endpoints.ts';
import { startWorker } from '../../src/worker.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { startWebhookReceiver, status, type Answer } from '../fakes/webhook-receiver.ts';
import { freePort } from '../helpers/ports.ts';
import {
  createCustomer,
  startTestService,
  submitPhoto,
  waitFor,
  type Customer,
  type TestService,
} from '../helpers/service.ts';

const root = path.join(import.meta.dirname, '..', '..');
const cli = path.join(root, 'src', 'cli.ts');
const photo = await renderMeterPhoto();
type Receiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

interface Scene {
  service: TestService;
  receiver: Receiver;
  customer: Customer;
  /** The environment of a spawned `meterlens worker`/`web` against the scene's database and fakes. */
  env: NodeJS.ProcessEnv;
}

/** The web app in this process; reads and deliveries by spawned workers (or `inProcessWorker`). */
async function setUp(
  t: Test,
  options: { inProcessWorker?: boolean; readDelayMs?: number; env?: Record<string, string> } = {},
): Promise<Scene> {
  const service = await startTestService(t, {
    worker: options.inProcessWorker ?? false,
    model: { delayMs: options.readDelayMs ?? 300 },
    env: options.env,
  });
  // As service.ts does: the queue's connection errors during an outage are reported, not thrown.
  service.boss.on('error', () => {});
  const receiver = await startWebhookReceiver();
  t.teardown(receiver.close);
  const customer = await createCustomer(service.db, { monthlyLimit: 100_000 });
  await addWebhookEndpoint(service.db, service.config, { accountId: customer.accountId, url: `${receiver.url}/hook` });
  const env = {
    ...process.env,
    DATABASE_URL: service.databaseUrl,
    LOG_LEVEL: 'silent',
    READER_CHAIN: 'openai',
    OPENAI_BASE_URL: service.model.url,
    OPENAI_API_KEY: 'sk-test',
    READER_RETRIES: '0',
    WEBHOOK_ALLOW_PRIVATE: '1',
  };
  return { service, receiver, customer, env };
}

/** A spawned `meterlens worker` or `web`; `ready` resolves once it says it is polling or listening. */
function spawnRole(
  t: Test,
  role: 'worker' | 'web',
  env: NodeJS.ProcessEnv,
): { child: ChildProcess; ready: Promise<void> } {
  const child = spawn(process.execPath, [cli, role], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => child.kill('SIGKILL'));
  const ready = new Promise<void>((resolve) =>
    child.stdout!.on(
      'data',
      (chunk: Buffer) => /worker polling queues|listening on/.test(chunk.toString()) && resolve(),
    ),
  );
  return { child, ready };
}

/** Submits `count` photos, `perSecond` a second, and returns the reference ids answered 202. */
async function submitSteadily(
  scene: Scene,
  count: number,
  perSecond: number,
): Promise<{ accepted: string[]; refused: number[] }> {
  const accepted: string[] = [];
  const refused: number[] = [];
  const submissions = [];
  for (let i = 0; i < count; i++) {
    submissions.push(
      submitPhoto(scene.service, { key: scene.customer.key, image: photo })
        .then((response) =>
          response.status === 202 ? accepted.push(response.body.reference_id) : refused.push(response.status),
        )
        .catch(() => refused.push(0)),
    );
    await sleep(1000 / perSecond);
  }
  await Promise.all(submissions);
  return { accepted, refused };
}

/** Waits for every accepted meter to finish and its webhook to arrive, then prints and checks the counts. */
async function checkNothingLost(
  t: Test,
  scene: Scene,
  accepted: string[],
  label: string,
  timeoutMs = 120_000,
): Promise<void> {
  const started = Date.now();
  const finished = () =>
    scene.service.db
      .selectFrom('submissions')
      .select(['reference_id', 'status'])
      .where('reference_id', 'in', accepted)
      .where('status', 'in', ['completed', 'failed'])
      .execute();
  const deliveredWebhooks = () =>
    scene.receiver
      .requestsTo('/hook')
      .filter((request) => (request.answeredStatus ?? 0) >= 200 && (request.answeredStatus ?? 0) < 300);
  const webhookFor = () =>
    new Set(deliveredWebhooks().map((request) => JSON.parse(request.body).data.reference_id as string));
  const done = await waitFor(
    finished,
    (rows) => rows.length === accepted.length && accepted.every((id) => webhookFor().has(id)),
    timeoutMs,
  );
  const delivered = webhookFor();
  const ids = deliveredWebhooks().map((request) => request.headers['webhook-id']);
  const counts = {
    accepted: accepted.length,
    completed: done.filter((row) => row.status === 'completed').length,
    failed: done.filter((row) => row.status === 'failed').length,
    unfinished: accepted.length - done.length,
    webhooks_missing: accepted.filter((id) => !delivered.has(id)).length,
    duplicates_by_webhook_id: ids.length - new Set(ids).size,
    settled_after_s: Number(((Date.now() - started) / 1000).toFixed(1)),
  };
  console.log(`# ${label}: ${JSON.stringify(counts)}`);
  t.ok(accepted.length > 0, `${label}: submissions were accepted`);
  t.equal(counts.unfinished, 0, `${label}: every accepted meter finished`);
  t.equal(counts.webhooks_missing, 0, `${label}: every finished meter's webhook arrived`);
}

t.test('worker SIGKILL mid-read and mid-delivery', async (t) => {
  const scene = await setUp(t);
  // The receiver takes 300 ms, so some kills land while a webhook is being posted.
  const slowAnswer: Answer = (response) => setTimeout(() => status(204)(response), 300);
  scene.receiver.answer('/hook', ...Array<Answer>(1000).fill(slowAnswer));
  const workers = [spawnRole(t, 'worker', scene.env).child, spawnRole(t, 'worker', scene.env).child];
  let kills = 0;
  const killing = (async () => {
    await sleep(3000);
    for (let round = 0; round < 5; round++) {
      const slot = round % workers.length;
      workers[slot].kill('SIGKILL');
      kills++;
      workers[slot] = spawnRole(t, 'worker', scene.env).child;
      await sleep(2000);
    }
  })();
  const { accepted } = await submitSteadily(scene, 60, 5);
  await killing;
  console.log(`# worker SIGKILL: ${kills} kills`);
  await checkNothingLost(t, scene, accepted, 'worker SIGKILL');
});

t.test('the database refuses connections for 5 s under load', async (t) => {
  const scene = await setUp(t);
  // A worker that cannot reach the database at start-up exits (its platform restarts it): start it first.
  await spawnRole(t, 'worker', scene.env).ready;
  const database = new URL(scene.service.databaseUrl).pathname.slice(1);
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  t.teardown(() => admin.end());
  const outage = (async () => {
    await sleep(3000);
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [database]);
    await sleep(5000);
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
  })();
  const { accepted, refused } = await submitSteadily(scene, 60, 5);
  await outage;
  console.log(
    `# database outage: ${refused.length} submissions refused during it (statuses ${[...new Set(refused)].join(', ')})`,
  );
  await checkNothingLost(t, scene, accepted, 'database outage');
});

t.test('the receiver is down, then up again', async (t) => {
  const scene = await setUp(t, { inProcessWorker: true });
  const down = 20;
  scene.receiver.answer('/hook', ...Array<Answer>(down).fill(status(503)));
  const { accepted } = await submitSteadily(scene, 20, 10);
  await checkNothingLost(t, scene, accepted, 'receiver down then up');
  t.ok(scene.receiver.requestsTo('/hook').length > down, 'the webhooks it refused were retried');
});

t.test("one account's burst while another account submits", async (t) => {
  const scene = await setUp(t);
  await spawnRole(t, 'worker', scene.env).ready;
  const quiet = await createCustomer(scene.service.db);
  await addWebhookEndpoint(scene.service.db, scene.service.config, {
    accountId: quiet.accountId,
    url: `${scene.receiver.url}/hook`,
  });
  const unfinished = async (accountId: string) =>
    (
      await scene.service.db
        .selectFrom('submissions')
        .select('id')
        .where('account_id', '=', accountId)
        .where('status', 'in', ['pending', 'processing'])
        .execute()
    ).length;
  // 80 photos at 300 ms a read, two at a time: a backlog of about 12 s.
  const { accepted } = await submitSteadily(scene, 80, 40);
  const quietAccepted: string[] = [];
  const quietReads: Array<{ ms: number; burstLeft: number }> = [];
  for (let i = 0; i < 5; i++) {
    const response = await submitPhoto(scene.service, { key: quiet.key, image: photo });
    const ackedAt = Date.now();
    quietAccepted.push(response.body.reference_id);
    await waitFor(
      () =>
        scene.service.db
          .selectFrom('submissions')
          .select('status')
          .where('reference_id', '=', response.body.reference_id)
          .executeTakeFirstOrThrow(),
      (meter) => meter.status !== 'pending' && meter.status !== 'processing',
    );
    quietReads.push({ ms: Date.now() - ackedAt, burstLeft: await unfinished(scene.customer.accountId) });
  }
  console.log(
    `# tenant fairness: the quiet account's ack to reading, and the burst's photos still unread then: ${JSON.stringify(quietReads)}`,
  );
  t.ok(
    quietReads.every((read) => read.burstLeft > 0),
    "tenant fairness: each of the quiet account's photos was read before the burst's backlog drained",
  );
  await checkNothingLost(t, scene, [...accepted, ...quietAccepted], 'tenant fairness');
});

t.test('SIGTERM with requests in flight', async (t) => {
  const scene = await setUp(t, { readDelayMs: 1000 });
  const port = await freePort();
  const graceSeconds = 5;
  const web = spawnRole(t, 'web', {
    ...scene.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    SHUTDOWN_GRACE_SECONDS: String(graceSeconds),
  });
  const exited = new Promise<number | null>((resolve) => web.child.once('exit', (code) => resolve(code)));
  await web.ready;
  await startWorker({ ...scene.service, config: loadConfig({ ...scene.env, QUEUE_SUPERVISE_SECONDS: '1' }) });

  const viaWeb = { ...scene.service, url: `http://127.0.0.1:${port}` };
  const requests = Array.from({ length: 20 }, (_, i) =>
    submitPhoto(viaWeb, { key: scene.customer.key, image: photo, sync: i % 4 === 0 }).catch(() => ({
      status: 0,
      body: {},
    })),
  );
  await sleep(300);
  const signalledAt = Date.now();
  web.child.kill('SIGTERM');
  const answers = await Promise.all(requests);
  const exitCode = await exited;
  const statuses = answers.map((answer) => answer.status);
  console.log(
    `# SIGTERM: exited ${exitCode} after ${((Date.now() - signalledAt) / 1000).toFixed(1)} s; statuses ${statuses.join(' ')}`,
  );
  t.equal(exitCode, 0, 'SIGTERM: the web process exits cleanly');
  // Requests that reach the closing server are refused with 503 in the envelope, to be retried; 0 = refused connection.
  const refusals = answers.filter((answer) => answer.status === 503);
  t.ok(
    statuses.every((code) => [0, 200, 202, 503].includes(code)),
    'SIGTERM: answered, accepted or refused, never a 500',
  );
  t.ok(
    refusals.every((answer) => answer.body.errors?.server),
    'SIGTERM: refusals are in the error envelope',
  );
  const accepted = answers
    .filter((answer) => answer.status === 202)
    .map((answer) => answer.body.reference_id as string);
  await checkNothingLost(t, scene, accepted, 'SIGTERM in flight');
});

t.test('recovery from a worker killed mid-read and mid-delivery, with the default queue settings', async (t) => {
  // The test's own queue instance supervises as a worker with the default interval would.
  const scene = await setUp(t, {
    readDelayMs: 60_000,
    env: { QUEUE_SUPERVISE_SECONDS: String(loadConfig({}).queueSuperviseSeconds) },
  });
  const neverAnswers: Answer = () => {};
  scene.receiver.answer('/hook', neverAnswers);
  const worker = spawnRole(t, 'worker', { ...scene.env, READER_TIMEOUT_MS: '120000' });
  await worker.ready;
  const { accepted } = await submitSteadily(scene, 1, 1);
  await waitFor(
    async () => scene.service.model.requests.length,
    (count) => count > 0,
  );

  worker.child.kill('SIGKILL');
  const readKilledAt = Date.now();
  scene.service.model.setBehaviour({ delayMs: 100 });
  const second = spawnRole(t, 'worker', scene.env);
  await second.ready;
  await waitFor(
    async () => scene.receiver.requestsTo('/hook').length,
    (count) => count > 0,
    120_000,
  );
  const readRecoverySeconds = (Date.now() - readKilledAt) / 1000;

  // The webhook's first attempt is now waiting on a receiver that never answers: kill that worker too.
  second.child.kill('SIGKILL');
  const deliveryKilledAt = Date.now();
  await spawnRole(t, 'worker', scene.env).ready;
  await checkNothingLost(t, scene, accepted, 'recovery with defaults');
  const deliveryRecoverySeconds = (Date.now() - deliveryKilledAt) / 1000;
  console.log(
    `# recovery with defaults: read retried and webhook sent ${readRecoverySeconds.toFixed(1)} s after SIGKILL mid-read; webhook delivered ${deliveryRecoverySeconds.toFixed(1)} s after SIGKILL mid-delivery`,
  );
});
