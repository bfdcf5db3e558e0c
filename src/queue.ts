import { PgBoss, type Db as IDatabase, type Queue } from 'pg-boss';
import type { Config } from './config.ts';
import { pgConnectionOptions } from './db/connect.ts';

/** The pg-boss queues, as operators see them in pgboss.job.name. */
export const QUEUES = {
  readMeter: 'read-meter',
  /** Read jobs whose retries are spent land here, so their meter is failed and the client told. */
  readMeterDeadLetter: 'read-meter-dead-letter',
  deliverWebhook: 'deliver-webhook',
  expireStaleSubmissions: 'expire-stale-meters',
  announceExpiredSubscriptions: 'announce-expired-subscriptions',
  purgeOldData: 'purge-old-data',
} as const;

export const READ_RETRY_LIMIT = 2;

/**
 * Workers refresh each running job's heartbeat; a job whose heartbeat is this old (its worker died)
 * is failed and retried at the next supervision, long before its expiry. pg-boss's minimum.
 */
const JOB_HEARTBEAT_SECONDS = 10;
/** A webhook job may outlive its POST's timeout by this much: loading the delivery and recording the attempt. */
const DELIVERY_BOOKKEEPING_SECONDS = 30;

export interface ReadJob {
  submissionId: string;
}

/**
 * The submission a read job is for. Jobs queued by releases before the `submissions` table had its name call it
 * `meterId`, and a deploy's new workers read the jobs the old web processes queued.
 */
export function jobSubmissionId(data: ReadJob | { meterId: string }): string {
  return 'submissionId' in data ? data.submissionId : data.meterId;
}

export interface DeliverWebhookJob {
  deliveryId: string;
  /** The pg-boss group of the job: WEBHOOK_ENDPOINT_CONCURRENCY bounds the attempts in flight per endpoint. */
  endpointId: string;
}

/** Only worker processes supervise the queues (expiry, retries, cron); web processes just send. */
export function createBoss(
  connectionString: string,
  config: Config,
  options: { supervise: boolean } = { supervise: true },
): PgBoss {
  return new PgBoss({
    ...pgConnectionOptions(connectionString),
    application_name: 'meterlens-queue',
    useListenNotify: true,
    supervise: options.supervise,
    schedule: options.supervise,
    superviseIntervalSeconds: config.queueSuperviseSeconds,
    monitorIntervalSeconds: config.queueSuperviseSeconds,
  });
}

/** Creates or updates every queue; run by `meterlens migrate` and at start-up. */
export async function ensureQueues(boss: PgBoss, config: Config): Promise<void> {
  await ensureQueue(boss, QUEUES.readMeterDeadLetter, {}, { notify: true });
  await ensureQueue(
    boss,
    QUEUES.readMeter,
    { deadLetter: QUEUES.readMeterDeadLetter },
    {
      notify: true,
      retryLimit: READ_RETRY_LIMIT,
      retryDelay: config.readRetryDelaySeconds,
      retryBackoff: true,
      expireInSeconds: config.readJobExpireSeconds,
      heartbeatSeconds: JOB_HEARTBEAT_SECONDS,
    },
  );
  // Delivery retries are scheduled by the delivery itself (backoff, Retry-After); pg-boss retries
  // only cover a worker that died mid-attempt.
  await ensureQueue(
    boss,
    QUEUES.deliverWebhook,
    {},
    {
      notify: true,
      retryLimit: 5,
      // 5 s, then doubling: a dead worker's attempt is soon retried, and one that could not record its attempt outlasts
      // a 2-minute outage.
      retryDelay: 5,
      retryBackoff: true,
      expireInSeconds: Math.ceil(config.webhookTimeoutMs / 1000) + DELIVERY_BOOKKEEPING_SECONDS,
      heartbeatSeconds: JOB_HEARTBEAT_SECONDS,
    },
  );
  await ensureQueue(boss, QUEUES.expireStaleSubmissions, { policy: 'singleton' }, { retryLimit: 0 });
  await ensureQueue(boss, QUEUES.announceExpiredSubscriptions, { policy: 'singleton' }, { retryLimit: 0 });
  await ensureQueue(boss, QUEUES.purgeOldData, { policy: 'singleton' }, { retryLimit: 0 });
  // pg-boss's own maintenance deletes finished jobs this long after they finished.
  const deleteAfterSeconds = config.finishedJobRetentionDays * 86_400;
  for (const name of Object.values(QUEUES)) await boss.updateQueue(name, { deleteAfterSeconds });
}

/** Policy and dead letter are fixed when a queue is created; the rest follows the config. */
async function ensureQueue(
  boss: PgBoss,
  name: string,
  fixed: Pick<Queue, 'policy' | 'deadLetter'>,
  tunable: Omit<Queue, 'name' | 'policy' | 'deadLetter' | 'partition'>,
): Promise<void> {
  if (await boss.getQueue(name)) await boss.updateQueue(name, tunable);
  else await boss.createQueue(name, { ...fixed, ...tunable });
}

/**
 * The account is the job's pg-boss group: READ_ACCOUNT_CONCURRENCY bounds its reads in flight, across
 * all workers. Jobs queued before reads were grouped have none and are read outside any share.
 */
export async function enqueueRead(
  boss: PgBoss,
  db: IDatabase,
  job: ReadJob,
  accountId: string,
  startAfter?: Date,
): Promise<void> {
  await boss.send(QUEUES.readMeter, job, { db, group: { id: accountId }, startAfter });
}

export async function enqueueDelivery(
  boss: PgBoss,
  db: IDatabase,
  job: DeliverWebhookJob,
  startAfter?: Date,
): Promise<void> {
  await boss.send(QUEUES.deliverWebhook, job, { db, startAfter, group: { id: job.endpointId } });
}
