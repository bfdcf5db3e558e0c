import { sql } from 'kysely';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from './db/database.ts';
import type { AnomalyKind } from './meters/anomalies.ts';
import { QUEUES } from './queue.ts';
import type { ChainReading, ReadAttempt } from './readers/chain.ts';

/**
 * The process's Prometheus metrics, served by GET /metrics (docs/operations.md, "Metrics"). Counters live in
 * the process that counts; the queue gauges are read from pg-boss's table at scrape time, so
 * every process reports the same queue numbers.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'meterlens_' });

const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export const httpRequestDuration = new Histogram({
  name: 'meterlens_http_request_duration_seconds',
  help: 'HTTP requests by method, route pattern and status code, with their latency',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: LATENCY_BUCKETS_SECONDS,
  registers: [registry],
});

export const acceptedSubmissions = new Counter({
  name: 'meterlens_acks_total',
  help: 'Submissions accepted (meter, image and job committed), by mode: async (202) or sync',
  labelNames: ['mode'] as const,
  registers: [registry],
});

export const usageRefusals = new Counter({
  name: 'meterlens_usage_refusals_total',
  help: "Submissions refused because the plan's monthly limit was reached",
  labelNames: ['plan'] as const,
  registers: [registry],
});

const readings = new Counter({
  name: 'meterlens_readings_total',
  help: 'Finished meters by the reader that produced the reading ("none" when failed) and outcome: completed or the failure code',
  labelNames: ['reader', 'outcome'] as const,
  registers: [registry],
});

const escalatedReadings = new Counter({
  name: 'meterlens_readings_escalated_total',
  help: 'Completed readings produced by a reader after the first in the chain',
  labelNames: ['reader'] as const,
  registers: [registry],
});

const readingConfidence = new Histogram({
  name: 'meterlens_reading_confidence',
  help: 'Confidence (0-100) of completed readings, by the reader that produced them',
  labelNames: ['reader'] as const,
  buckets: [10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 100],
  registers: [registry],
});

const readerAttemptDuration = new Histogram({
  name: 'meterlens_reader_attempt_duration_seconds',
  help: 'One reader looking at one photo, by reader and outcome (accepted, low_confidence, unavailable, unreadable, unparseable)',
  labelNames: ['reader', 'outcome'] as const,
  buckets: LATENCY_BUCKETS_SECONDS,
  registers: [registry],
});

const webhookAttemptDuration = new Histogram({
  name: 'meterlens_webhook_attempt_duration_seconds',
  help: 'Webhook delivery attempts by outcome (delivered, http_error, no_answer), with their latency',
  labelNames: ['outcome'] as const,
  buckets: LATENCY_BUCKETS_SECONDS,
  registers: [registry],
});

const meterAnomalies = new Counter({
  name: 'meterlens_meter_anomalies_total',
  help: 'Episodes of meters that need a visit, counted when they open (each sent one meter.anomaly), by kind: stopped, backwards, leak',
  labelNames: ['kind'] as const,
  registers: [registry],
});

const queueJobs = new Gauge({
  name: 'meterlens_queue_jobs',
  help: 'Jobs in pg-boss by queue and state, read from the database at scrape time',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
});

const queueOldestJobAge = new Gauge({
  name: 'meterlens_queue_oldest_job_age_seconds',
  help: 'Age of the oldest job by queue and state (0 when there is none), read at scrape time',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
});

const JOB_STATES = ['created', 'retry', 'active', 'completed', 'cancelled', 'failed'] as const;

/** A meter that finished with a reading (counted once, when its outcome is recorded). */
export function observeReading(result: ChainReading): void {
  readings.inc({ reader: result.reader, outcome: 'completed' });
  if (result.escalated) escalatedReadings.inc({ reader: result.reader });
  readingConfidence.observe({ reader: result.reader }, result.confidence);
}

export function observeFailedReading(code: string): void {
  readings.inc({ reader: 'none', outcome: code });
}

/** Every reader the chain asked about one photo, whatever came of it. */
export function observeReaderAttempts(attempts: ReadAttempt[]): void {
  for (const attempt of attempts)
    readerAttemptDuration.observe({ reader: attempt.reader, outcome: attempt.outcome }, attempt.ms / 1000);
}

export function observeWebhookAttempt(attempt: {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}): void {
  const outcome = attempt.error === null ? 'delivered' : attempt.statusCode === null ? 'no_answer' : 'http_error';
  webhookAttemptDuration.observe({ outcome }, attempt.durationMs / 1000);
}

/** Anomaly episodes a committed change opened. */
export function observeAnomalies(kinds: readonly AnomalyKind[]): void {
  for (const kind of kinds) meterAnomalies.inc({ kind });
}

/** The Prometheus text exposition, with the queue gauges read from the database first. */
export async function metricsText(db: Db): Promise<string> {
  await readQueueGauges(db);
  return registry.metrics();
}

async function readQueueGauges(db: Db): Promise<void> {
  const { rows } = await sql<{ queue: string; state: string; jobs: number; oldest_age_seconds: number }>`
    SELECT name AS queue, state::text AS state, count(*)::int AS jobs,
           extract(epoch FROM now() - min(created_on))::float8 AS oldest_age_seconds
    FROM pgboss.job GROUP BY name, state`.execute(db);
  queueJobs.reset();
  queueOldestJobAge.reset();
  // Every queue and state is reported, 0 when empty, so an alert sees "none" rather than "no data".
  for (const queue of Object.values(QUEUES)) {
    for (const state of JOB_STATES) {
      queueJobs.set({ queue, state }, 0);
      queueOldestJobAge.set({ queue, state }, 0);
    }
  }
  for (const row of rows) {
    queueJobs.set({ queue: row.queue, state: row.state }, row.jobs);
    queueOldestJobAge.set({ queue: row.queue, state: row.state }, Math.max(0, row.oldest_age_seconds));
  }
}

export const METRICS_CONTENT_TYPE = registry.contentType;
