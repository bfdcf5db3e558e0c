import { sql } from 'kysely';
import type { Job, PgBoss, WorkOptions } from 'pg-boss';
import { announceExpiredSubscriptions } from './accounts/subscriptions.ts';
import { bossAdapter, type Db } from './db/database.ts';
import type { ServiceDeps } from './deps.ts';
import { purgeExpiredIdempotencyKeys } from './pipeline/idempotency.ts';
import { loadPhoto } from './photos/meter-photos.ts';
import { isPhotoStoreUnavailable } from './photos/store.ts';
import { sweepOrphanPhotos } from './photos/sweep.ts';
import { readContext } from './pipeline/expect-reading.ts';
import { readPhoto } from './pipeline/read.ts';
import {
  expireStaleSubmissions,
  markProcessing,
  recordFailure,
  recordReading,
  type SubmissionRef,
} from './pipeline/record.ts';
import {
  enqueueDelivery,
  enqueueRead,
  QUEUES,
  READ_RETRY_LIMIT,
  type DeliverWebhookJob,
  jobSubmissionId,
  type ReadJob,
} from './queue.ts';
import { ReadFailure } from './readers/chain.ts';
import { purgeOldData } from './retention.ts';
import { deliverWebhook } from './webhooks/deliver.ts';

/** Subscribes this process to every queue; pg-boss polls them (and is woken by NOTIFY). */
export async function startWorker(deps: ServiceDeps): Promise<void> {
  const { boss, config } = deps;
  // NOTIFY wakes workers for new jobs only; retries and scheduled webhook attempts are found by polling.
  const polling = {
    pollingIntervalSeconds: config.queuePollSeconds,
    notifyPollingIntervalSeconds: config.queuePollSeconds,
  };
  // An account's backlog holds at most readAccountConcurrency of the read slots; other accounts' photos take the rest
  // at once.
  const perAccount = { ...polling, groupConcurrency: config.readAccountConcurrency };
  await workContinuously<ReadJob>(boss, QUEUES.readMeter, config.workerConcurrency, perAccount, async (job) => {
    // Jobs queued before reads were grouped by account have no group, and no share to keep.
    if (job.groupId && !(await withinGroupShare(deps.db, job, config.readAccountConcurrency))) {
      // At once: the fetch passes over an account at its share, and a later start would wait for the next poll.
      await enqueueRead(boss, bossAdapter(deps.db), job.data, job.groupId);
    } else await readMeter(deps, job);
  });
  // A receiver that never answers holds at most webhookEndpointConcurrency of the delivery slots.
  const perEndpoint = { ...polling, groupConcurrency: config.webhookEndpointConcurrency };
  await workContinuously<DeliverWebhookJob>(
    boss,
    QUEUES.deliverWebhook,
    config.webhookConcurrency,
    perEndpoint,
    async (job) => {
      if (await withinGroupShare(deps.db, job, config.webhookEndpointConcurrency))
        await deliverWebhook(deps, job.data.deliveryId);
      else await enqueueDelivery(boss, bossAdapter(deps.db), job.data, new Date(Date.now() + OVER_SHARE_DELAY_MS));
    },
  );
  await boss.work<ReadJob>(QUEUES.readMeterDeadLetter, polling, async (jobs) => {
    for (const job of jobs) await failAbandonedSubmission(deps, job);
  });
  await boss.work(QUEUES.expireStaleSubmissions, async () => {
    await expireStaleSubmissions(deps, config.meterDeadlineSeconds);
    await purgeExpiredIdempotencyKeys(deps.db);
  });
  await boss.schedule(QUEUES.expireStaleSubmissions, '* * * * *');
  await boss.work(QUEUES.announceExpiredSubscriptions, () => announceExpiredSubscriptions(deps));
  await boss.schedule(QUEUES.announceExpiredSubscriptions, '* * * * *');
  await boss.work(QUEUES.purgeOldData, async () => {
    await purgeOldData(deps, config);
    await sweepOrphanPhotos(deps);
  });
  await boss.schedule(QUEUES.purgeOldData, '*/10 * * * *');
}

/** How long an attempt admitted beyond its endpoint's share waits before it is fetched again. */
const OVER_SHARE_DELAY_MS = 1000;

/**
 * pg-boss bounds a group's active jobs when it fetches, but fetches that run at the same instant
 * (a burst wakes every worker) can each see room and together take more. A job goes ahead only
 * while fewer than `share` other jobs of its group are active; the rest are queued again without
 * running. Every other active job counts, not only those fetched earlier: a fetch whose transaction
 * began first may commit last, and is then invisible to the jobs checked before it commits, so a
 * rule of "the oldest `share` go ahead" let one more through. Of any jobs running together, the one
 * whose fetch committed last sees all the others, so the share holds exactly.
 */
async function withinGroupShare(db: Db, job: Job<object>, share: number): Promise<boolean> {
  const { rows } = await sql<{ others: number }>`
    SELECT count(*)::int AS others
    FROM pgboss.job other, pgboss.job this
    WHERE this.name = ${job.name} AND this.id = ${job.id}
      AND other.name = ${job.name} AND other.state = 'active' AND other.group_id = this.group_id
      AND other.id <> this.id`.execute(db);
  return (rows[0]?.others ?? 0) < share;
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
export async function readMeter(deps: ServiceDeps, job: Job<ReadJob>): Promise<void> {
  const submission = await loadSubmission(deps.db, jobSubmissionId(job.data));
  if (!submission || !(await markProcessing(deps.db, submission.ref.submissionId))) return;
  try {
    const context = await readContext(deps.db, submission.ref.submissionId);
    const photo = await loadPhoto(deps, submission.ref.submissionId);
    if (!photo) throw new Error(`submission ${submission.ref.submissionId} has no photo`);
    const result = await readPhoto(deps, submission.ref.submissionId, photo, context, job.signal);
    await recordReading(deps, submission.ref, result, context);
  } catch (error) {
    // The photo is safe in the bucket: the read waits for it, past the job's retries, until METER_DEADLINE_SECONDS.
    if (isPhotoStoreUnavailable(error)) {
      await enqueueRead(
        deps.boss,
        bossAdapter(deps.db),
        { submissionId: submission.ref.submissionId },
        submission.ref.accountId,
        new Date(Date.now() + deps.config.readRetryDelaySeconds * 1000),
      );
      return;
    }
    if (!(error instanceof ReadFailure)) throw error;
    // Unreachable models may be back soon: let pg-boss retry, and give up on the last attempt.
    if (error.code === 'readers_unavailable' && job.retryCount < READ_RETRY_LIMIT) throw error;
    await recordFailure(deps, submission.ref, { code: error.code, message: error.message });
  }
}

/** A read job that kept crashing or whose worker died on every attempt. */
async function failAbandonedSubmission(deps: ServiceDeps, job: Job<ReadJob>): Promise<void> {
  const submission = await loadSubmission(deps.db, jobSubmissionId(job.data));
  if (!submission) return;
  await recordFailure(deps, submission.ref, {
    code: 'processing_failed',
    message: `The meter could not be processed after ${READ_RETRY_LIMIT + 1} attempts`,
  });
}

async function loadSubmission(db: Db, submissionId: string): Promise<{ ref: SubmissionRef } | undefined> {
  const row = await db
    .selectFrom('submissions')
    .select(['id', 'account_id', 'reference_id', 'mode'])
    .where('id', '=', submissionId)
    .executeTakeFirst();
  if (!row) return undefined;
  return { ref: { submissionId: row.id, accountId: row.account_id, referenceId: row.reference_id, mode: row.mode } };
}
