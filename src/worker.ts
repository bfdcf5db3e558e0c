import { sql } from 'kysely';
import type { Job, PgBoss, WorkOptions } from 'pg-boss';
import { announceExpiredSubscriptions } from './accounts/subscriptions.ts';
import { bossAdapter, type Db } from './db/database.ts';
import type { ServiceDeps } from './deps.ts';
import { purgeExpiredIdempotencyKeys } from './pipeline/idempotency.ts';
import { readContext } from './pipeline/plausibility.ts';
import { readPhoto } from './pipeline/read.ts';
import { expireStaleMeters, markProcessing, recordFailure, recordReading, type MeterRef } from './pipeline/record.ts';
import { enqueueDelivery, QUEUES, READ_RETRY_LIMIT, type DeliverWebhookJob, type ReadMeterJob } from './queue.ts';
import { ReadFailure } from './readers/chain.ts';
import { purgeOldData } from './retention.ts';
import { deliverWebhook } from './webhooks/deliver.ts';

/** Subscribes this process to every queue; pg-boss polls them (and is woken by NOTIFY). */
export async function startWorker(deps: ServiceDeps): Promise<void> {
  const { boss, config } = deps;
  // NOTIFY wakes workers for new jobs only; retries and scheduled webhook attempts are found by polling.
  const polling = { pollingIntervalSeconds: config.queuePollSeconds, notifyPollingIntervalSeconds: config.queuePollSeconds };
  await workContinuously<ReadMeterJob>(boss, QUEUES.readMeter, config.workerConcurrency, polling, (job) => readMeter(deps, job));
  // A receiver that never answers holds at most webhookEndpointConcurrency of the delivery slots.
  const perEndpoint = { ...polling, groupConcurrency: config.webhookEndpointConcurrency };
  await workContinuously<DeliverWebhookJob>(boss, QUEUES.deliverWebhook, config.webhookConcurrency, perEndpoint, async (job) => {
    if (await withinEndpointShare(deps, job)) await deliverWebhook(deps, job.data.deliveryId);
    else await enqueueDelivery(boss, bossAdapter(deps.db), job.data, new Date(Date.now() + OVER_SHARE_DELAY_MS));
  });
  await boss.work<ReadMeterJob>(QUEUES.readMeterDeadLetter, polling, async (jobs) => {
    for (const job of jobs) await failAbandonedMeter(deps, job);
  });
  await boss.work(QUEUES.expireStaleMeters, async () => {
    await expireStaleMeters(deps, config.meterDeadlineSeconds);
    await purgeExpiredIdempotencyKeys(deps.db);
  });
  await boss.schedule(QUEUES.expireStaleMeters, '* * * * *');
  await boss.work(QUEUES.announceExpiredSubscriptions, () => announceExpiredSubscriptions(deps));
  await boss.schedule(QUEUES.announceExpiredSubscriptions, '* * * * *');
  await boss.work(QUEUES.purgeOldData, () => purgeOldData(deps.db, config));
  await boss.schedule(QUEUES.purgeOldData, '*/10 * * * *');
}

/** How long an attempt admitted beyond its endpoint's share waits before it is fetched again. */
const OVER_SHARE_DELAY_MS = 1000;

/**
 * pg-boss bounds a group's active jobs when it fetches, but fetches that run at the same instant
 * (a burst wakes every delivery worker) can each see room and together take more. Every admitted
 * attempt is active and committed before its handler runs, so each sees the others: the oldest
 * `webhookEndpointConcurrency` of the endpoint go ahead, the rest are queued again without an attempt.
 */
async function withinEndpointShare(deps: ServiceDeps, job: Job<DeliverWebhookJob>): Promise<boolean> {
  const { rows } = await sql<{ ahead: number }>`
    SELECT count(*)::int AS ahead
    FROM pgboss.job other, pgboss.job this
    WHERE this.name = ${QUEUES.deliverWebhook} AND this.id = ${job.id}
      AND other.name = ${QUEUES.deliverWebhook} AND other.state = 'active' AND other.group_id = this.group_id
      AND (other.started_on, other.id) < (this.started_on, this.id)`.execute(deps.db);
  return (rows[0]?.ahead ?? 0) < deps.config.webhookEndpointConcurrency;
}

/**
 * `concurrency` workers, each taking one job at a time. pg-boss waits a polling interval after
 * every job unless NOTIFY woke it, so a backlog would drain at one job per worker per interval;
 * each worker here wakes itself after a job and fetches again at once while there is work.
 */
async function workContinuously<T extends object>(
  boss: PgBoss,
  queue: string,
  concurrency: number,
  options: WorkOptions,
  handle: (job: Job<T>) => Promise<void>,
): Promise<void> {
  for (let i = 0; i < concurrency; i++) {
    let workerId: string | undefined;
    workerId = await boss.work<T>(queue, options, async (jobs) => {
      try {
        for (const job of jobs) await handle(job);
      } finally {
        if (workerId) boss.notifyWorker(workerId);
      }
    });
  }
}

/** Steps 6–8 for an async submission: normalise and read, record, notify. */
export async function readMeter(deps: ServiceDeps, job: Job<ReadMeterJob>): Promise<void> {
  const meter = await loadMeter(deps.db, job.data.meterId);
  if (!meter || !(await markProcessing(deps.db, meter.ref.meterId))) return;
  try {
    const context = await readContext(deps.db, meter.ref.meterId);
    const result = await readPhoto(deps, meter.ref.meterId, meter.image, context, job.signal);
    await recordReading(deps, meter.ref, result, context);
  } catch (error) {
    if (!(error instanceof ReadFailure)) throw error;
    // Unreachable models may be back soon: let pg-boss retry, and give up on the last attempt.
    if (error.code === 'readers_unavailable' && job.retryCount < READ_RETRY_LIMIT) throw error;
    await recordFailure(deps, meter.ref, { code: error.code, message: error.message });
  }
}

/** A read job that kept crashing or whose worker died on every attempt. */
async function failAbandonedMeter(deps: ServiceDeps, job: Job<ReadMeterJob>): Promise<void> {
  const meter = await loadMeter(deps.db, job.data.meterId);
  if (!meter) return;
  await recordFailure(deps, meter.ref, {
    code: 'processing_failed',
    message: `The meter could not be processed after ${READ_RETRY_LIMIT + 1} attempts`,
  });
}

async function loadMeter(db: Db, meterId: string): Promise<{ ref: MeterRef; image: { jpeg: Buffer | null; upload: Buffer | null } } | undefined> {
  const row = await db
    .selectFrom('meters')
    .innerJoin('meter_images', 'meter_images.meter_id', 'meters.id')
    .select(['meters.id', 'meters.account_id', 'meters.reference_id', 'meters.mode', 'meter_images.jpeg', 'meter_images.upload'])
    .where('meters.id', '=', meterId)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    ref: { meterId: row.id, accountId: row.account_id, referenceId: row.reference_id, mode: row.mode },
    image: { jpeg: row.jpeg, upload: row.upload },
  };
}
