import { spawn } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { bossAdapter } from '../src/db/database.ts';
import { monthlyUsage } from '../src/pipeline/check-usage.ts';
import { expireStaleSubmissions } from '../src/pipeline/record.ts';
import { enqueueRead, QUEUES } from '../src/queue.ts';
import { addWebhookEndpoint } from '../src/webhooks/endpoints.ts';
import { startWorker } from '../src/worker.ts';
import { renderMeterPhoto } from './fakes/meter-photo.ts';
import { startWebhookReceiver } from './fakes/webhook-receiver.ts';
import {
  createCustomer,
  startTestService,
  submitPhoto,
  waitFor,
  waitForMeter,
  type TestService,
} from './helpers/service.ts';

const root = path.join(import.meta.dirname, '..');
const photo = await renderMeterPhoto();

async function readJobs(service: TestService, referenceId: string) {
  const meter = await service.db
    .selectFrom('submissions')
    .select('id')
    .where('reference_id', '=', referenceId)
    .executeTakeFirstOrThrow();
  const jobs = await sql<{ state: string; retry_count: number }>`
    SELECT state, retry_count FROM pgboss.job WHERE name = ${QUEUES.readMeter} AND data->>'submissionId' = ${meter.id}`.execute(
    service.db,
  );
  return jobs.rows;
}

t.test('the meter row and its job are committed together or not at all', async (t) => {
  const service = await startTestService(t, { worker: false });
  const customer = await createCustomer(service.db);
  const accepted = await submitPhoto(service, { key: customer.key, image: photo });
  t.match(await readJobs(service, accepted.body.reference_id), [{ state: 'created' }], 'commit: row and job');

  const account = await service.db
    .selectFrom('submissions')
    .select(['account_id', 'api_key_id'])
    .limit(1)
    .executeTakeFirstOrThrow();
  const rolledBack = service.db.transaction().execute(async (tx) => {
    const meter = await tx
      .insertInto('submissions')
      .values({ ...account, mode: 'async', error_code: null, error_message: null, started_at: null, finished_at: null })
      .returning('id')
      .executeTakeFirstOrThrow();
    await enqueueRead(service.boss, bossAdapter(tx), { submissionId: meter.id }, account.account_id);
    throw new Error('the submission fails after its job was enqueued');
  });
  await t.rejects(rolledBack, /fails after its job/);
  const meters = await service.db.selectFrom('submissions').select('id').execute();
  t.equal(meters.length, 1, 'rollback: no meter row');
  const jobs = await sql<{
    count: number;
  }>`SELECT count(*)::int AS count FROM pgboss.job WHERE name = ${QUEUES.readMeter}`.execute(service.db);
  t.equal(jobs.rows[0].count, 1, 'rollback: no job');
});

t.test('a worker killed mid-read: its job is retried and the meter completes', async (t) => {
  const service = await startTestService(t, {
    worker: false,
    env: { READ_JOB_EXPIRE_SECONDS: '2' },
    model: { delayMs: 120_000 },
  });
  const doomed = spawn(process.execPath, [path.join(root, 'src', 'cli.ts'), 'worker'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: service.databaseUrl,
      READER_CHAIN: 'openai',
      OPENAI_BASE_URL: service.model.url,
      OPENAI_API_KEY: 'sk-test',
      READER_TIMEOUT_MS: '120000',
      READER_RETRIES: '0',
    },
    stdio: 'ignore',
  });
  t.teardown(() => doomed.kill('SIGKILL'));
  const customer = await createCustomer(service.db);
  const accepted = await submitPhoto(service, { key: customer.key, image: photo });
  while (service.model.requests.length === 0) await sleep(50);
  t.equal(
    (await waitForMeter(service.db, accepted.body.reference_id, 0)).status,
    'processing',
    'the doomed worker took the job',
  );

  doomed.kill('SIGKILL');
  service.model.setBehaviour({});
  await startWorker(service);
  const meter = await waitForMeter(service.db, accepted.body.reference_id);
  t.equal(meter.status, 'completed');
  // pg-boss marks the job completed just after the handler has recorded the reading.
  const [job] = await waitFor(
    () => readJobs(service, accepted.body.reference_id),
    ([row]) => row.state !== 'active',
  );
  t.match(job, { state: 'completed' });
  t.ok(job.retry_count >= 1, 'it took a retry');
});

t.test('models unreachable: the read is retried, then the meter fails and the client is told', async (t) => {
  const service = await startTestService(t, { env: { READ_RETRY_DELAY_SECONDS: '1' }, model: { status: 503 } });
  const receiver = await startWebhookReceiver();
  t.teardown(receiver.close);
  const customer = await createCustomer(service.db);
  await addWebhookEndpoint(service.db, service.config, { accountId: customer.accountId, url: `${receiver.url}/hooks` });
  const accepted = await submitPhoto(service, { key: customer.key, image: photo });
  const meter = await waitForMeter(service.db, accepted.body.reference_id, 60_000);
  t.match(meter, { status: 'failed', error_code: 'readers_unavailable' });
  t.equal(service.model.requests.length, 3, 'one request per attempt: the first and two retries');
  t.equal(await monthlyUsage(service.db, customer.accountId), 0, 'a failure of the service is not counted');
  const [webhook] = await receiver.waitFor(1);
  t.match(JSON.parse(webhook.body), {
    event: 'reading.failed',
    data: { reference_id: accepted.body.reference_id, error: { code: 'readers_unavailable', message: String } },
  });
});

t.test('a meter left pending past its deadline is failed as expired, and the client is told', async (t) => {
  const service = await startTestService(t, { worker: false });
  const receiver = await startWebhookReceiver();
  t.teardown(receiver.close);
  const customer = await createCustomer(service.db);
  await addWebhookEndpoint(service.db, service.config, { accountId: customer.accountId, url: receiver.url });
  const accepted = await submitPhoto(service, { key: customer.key, image: photo });
  await sleep(1100);
  t.equal(await expireStaleSubmissions(service, 1), 1);
  t.equal(await expireStaleSubmissions(service, 1), 0, 'a meter expires once');
  t.match(await waitForMeter(service.db, accepted.body.reference_id), { status: 'failed', error_code: 'expired' });
  t.equal(await monthlyUsage(service.db, customer.accountId), 0, 'its count given back');

  await startWorker(service);
  const [webhook] = await receiver.waitFor(1);
  t.match(JSON.parse(webhook.body), { event: 'reading.failed', data: { error: { code: 'expired' } } });
  await sleep(300);
  t.equal(service.model.requests.length, 0, 'the worker does not read a meter that has already failed');
});

t.test('reading.completed reaches the client signed per Standard Webhooks', async (t) => {
  const service = await startTestService(t);
  const receiver = await startWebhookReceiver();
  t.teardown(receiver.close);
  const customer = await createCustomer(service.db);
  const endpoint = await addWebhookEndpoint(service.db, service.config, {
    accountId: customer.accountId,
    url: `${receiver.url}/meterlens`,
  });
  const accepted = await submitPhoto(service, { key: customer.key, image: photo });
  const [webhook] = await receiver.waitFor(1);

  const verified = new Webhook(endpoint.secret).verify(webhook.body, webhook.headers as Record<string, string>);
  const reading = await service.db
    .selectFrom('readings')
    .innerJoin('submissions', 'submissions.id', 'readings.submission_id')
    .select('readings.id')
    .where('submissions.reference_id', '=', accepted.body.reference_id)
    .executeTakeFirstOrThrow();
  t.same(verified, {
    event: 'reading.completed',
    timestamp: (verified as { timestamp: string }).timestamp,
    data: {
      reference_id: accepted.body.reference_id,
      reading: '02390.276',
      value: 2390.276,
      confidence: 97,
      escalated: false,
      model: service.config.openai.model,
      reading_id: Number(reading.id),
      meter_id: null,
      needs_review: false,
      whole_units_agreed: false,
      plausibility: {
        status: 'unknown',
        reference: null,
        reference_source: null,
        reference_submission: null,
        window: null,
      },
    },
  });
  t.match(webhook.headers['webhook-id'], /^msg_/);
  const delivery = await waitFor(
    () => service.db.selectFrom('webhook_deliveries').selectAll().executeTakeFirstOrThrow(),
    (row) => row.status !== 'pending',
  );
  t.match(delivery, {
    status: 'delivered',
    attempt_count: 1,
    last_status_code: 204,
    event_id: webhook.headers['webhook-id'],
  });
});

t.test('sync submissions send no webhook', async (t) => {
  const service = await startTestService(t);
  const receiver = await startWebhookReceiver();
  t.teardown(receiver.close);
  const customer = await createCustomer(service.db);
  await addWebhookEndpoint(service.db, service.config, { accountId: customer.accountId, url: receiver.url });
  t.equal((await submitPhoto(service, { key: customer.key, image: photo, sync: true })).status, 200);
  await sleep(300);
  t.equal(receiver.received.length, 0);
});

t.test('a backlog is read job after job, without waiting for the next poll', async (t) => {
  const service = await startTestService(t, {
    worker: false,
    env: { QUEUE_POLL_SECONDS: '60', WORKER_CONCURRENCY: '2' },
  });
  const customer = await createCustomer(service.db);
  for (let i = 0; i < 10; i++) t.equal((await submitPhoto(service, { key: customer.key, image: photo })).status, 202);
  await startWorker(service);
  const countCompleted = async () =>
    (await service.db.selectFrom('submissions').select('id').where('status', '=', 'completed').execute()).length;
  // Two workers that paused for a 60 s poll after each job would have read 2 meters by now.
  t.equal(await waitFor(countCompleted, (completed) => completed === 10, 30_000), 10);
});

t.test('a read that outlives its job on every attempt is dead-lettered, and its meter failed', async (t) => {
  const service = await startTestService(t, {
    env: { READ_JOB_EXPIRE_SECONDS: '1', READ_RETRY_DELAY_SECONDS: '1', READER_TIMEOUT_MS: '60000' },
    model: { delayMs: 60_000 },
  });
  const customer = await createCustomer(service.db);
  const accepted = await submitPhoto(service, { key: customer.key, image: photo });
  const meter = await waitFor(
    () => waitForMeter(service.db, accepted.body.reference_id, 0),
    (row) => row.status === 'failed',
    60_000,
  );
  t.match(meter, { status: 'failed', error_code: 'processing_failed', error_message: /after 3 attempts/ });
  t.equal(await monthlyUsage(service.db, customer.accountId), 0, 'a failure of the service is not counted');
});

t.test("one account's backlog does not hold another account's reading", async (t) => {
  const share = 2;
  const service = await startTestService(t, {
    worker: false,
    env: { WORKER_CONCURRENCY: '4', READ_ACCOUNT_CONCURRENCY: String(share) },
    model: { delayMs: 200 },
  });
  const busy = await createCustomer(service.db, { monthlyLimit: 1000 });
  const quiet = await createCustomer(service.db);
  const backlog = 24;
  const statuses = [];
  for (let i = 0; i < backlog; i++) statuses.push((await submitPhoto(service, { key: busy.key, image: photo })).status);
  t.same(new Set(statuses), new Set([202]), 'the backlog is accepted');
  const accepted = await submitPhoto(service, { key: quiet.key, image: photo });
  const meterStatuses = (accountId: string) =>
    service.db.selectFrom('submissions').select('status').where('account_id', '=', accountId).execute();
  let mostBusyReading = 0;
  let sampling = true;
  const sampled = (async () => {
    while (sampling) {
      const processing = (await meterStatuses(busy.accountId)).filter((meter) => meter.status === 'processing').length;
      mostBusyReading = Math.max(mostBusyReading, processing);
      await sleep(20);
    }
  })();

  await startWorker(service);
  t.match(await waitForMeter(service.db, accepted.body.reference_id), { status: 'completed' });
  const busyFinished = (await meterStatuses(busy.accountId)).filter((meter) => meter.status === 'completed').length;
  t.ok(
    busyFinished <= backlog / 3,
    `the quiet account's photo was read after ${busyFinished} of the ${backlog} queued before it`,
  );

  const busyMeters = await waitFor(
    () => meterStatuses(busy.accountId),
    (meters) => meters.every((meter) => meter.status === 'completed'),
  );
  t.ok(
    busyMeters.every((meter) => meter.status === 'completed'),
    'the backlog is read in full',
  );
  sampling = false;
  await sampled;
  t.ok(mostBusyReading <= share, `at most ${share} of one account's photos read at once (seen: ${mostBusyReading})`);
});

t.test('a read job queued without an account, as before reads were shared, is still read', async (t) => {
  const service = await startTestService(t, { worker: false });
  const customer = await createCustomer(service.db);
  const accepted = await submitPhoto(service, { key: customer.key, image: photo });
  await sql`UPDATE pgboss.job SET group_id = NULL WHERE name = ${QUEUES.readMeter}`.execute(service.db);
  await startWorker(service);
  t.match(await waitForMeter(service.db, accepted.body.reference_id), { status: 'completed' });
});

t.test(
  'a read job that names its submission meterId, as jobs queued by earlier releases do, is still read',
  async (t) => {
    const service = await startTestService(t, { worker: false });
    const customer = await createCustomer(service.db);
    const accepted = await submitPhoto(service, { key: customer.key, image: photo });
    await sql`UPDATE pgboss.job SET data = jsonb_build_object('meterId', data->'submissionId')
    WHERE name = ${QUEUES.readMeter}`.execute(service.db);
    await startWorker(service);
    t.match(await waitForMeter(service.db, accepted.body.reference_id), { status: 'completed' });
  },
);
