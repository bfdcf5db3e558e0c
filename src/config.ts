import { availableParallelism } from 'node:os';
import path from 'node:path';
import ipaddr from 'ipaddr.js';

/** Every setting comes from the environment; README's configuration table lists them all. */
export interface Config {
  /** Unset: an embedded PostgreSQL is started under `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  embeddedPostgresPort: number;
  host: string;
  port: number;
  logLevel: string;
  /** Public base URL printed at start-up and used in links. */
  publicUrl: string | undefined;
  /**
   * Addresses and CIDR ranges of the proxies whose X-Forwarded-* headers are believed (Fastify's
   * trustProxy list; `loopback`, `linklocal`, `uniquelocal` name ranges). Empty: none is, so a
   * client connecting directly cannot claim another address.
   */
  trustProxy: string[];
  /** A request whose body has not fully arrived this long after it started is answered 408 and closed. */
  requestTimeoutSeconds: number;
  /** After SIGTERM: how long requests and jobs in flight may finish before connections are cut and jobs left to the queue. */
  shutdownGraceSeconds: number;

  maxImagePixels: number;
  /** Long side of the normalised image handed to readers. */
  normalisedLongSide: number;

  /** Reader names in the order they are tried; undefined = the default chain. */
  readerChain: string[] | undefined;
  /** A reading below this confidence is escalated to the next reader in the chain. */
  escalateBelow: number;
  readerTimeoutMs: number;
  readerRetries: number;
  localModelDir: string;
  /** Threads the local reader reads one photo on (photos are read one at a time). */
  localReaderThreads: number;
  openai: { apiKey: string | undefined; baseUrl: string | undefined; model: string };
  anthropic: { apiKey: string | undefined; baseUrl: string | undefined; model: string };

  workerConcurrency: number;
  /** How long a read job may run before pg-boss treats its worker as dead and retries it. */
  readJobExpireSeconds: number;
  /** First delay before a read job is retried (exponential backoff after that). */
  readRetryDelaySeconds: number;
  /** A meter still pending or processing after this long is failed as `expired`. */
  meterDeadlineSeconds: number;
  /** How often pg-boss looks for jobs whose worker died (expired or missed heartbeats). */
  queueSuperviseSeconds: number;
  /** How often workers look for retries and delayed jobs (new jobs wake them at once by NOTIFY). */
  queuePollSeconds: number;

  webhookAllowPrivate: boolean;
  webhookTimeoutMs: number;
  /** Webhook attempts one worker process runs at once (delivery waits on receivers, not the CPU). */
  webhookConcurrency: number;
  /** Webhook attempts in flight to one endpoint, across all workers: a slow receiver holds no more slots. */
  webhookEndpointConcurrency: number;

  /** Photos older than this are deleted (meters and readings stay); 0 keeps them forever. */
  imageRetentionDays: number;
  /** Finished webhook deliveries and their attempts older than this are deleted; 0 keeps them. */
  webhookRetentionDays: number;
  /** pg-boss deletes completed jobs this long after they finished; 0 keeps them. */
  finishedJobRetentionDays: number;

  /** Bearer token GET /metrics requires; unset: only loopback clients may scrape. */
  metricsToken: string | undefined;
  /** A worker-only process serves /metrics on this port (the web process serves it on PORT). */
  metricsPort: number | undefined;

  /** `closed`: the dashboard offers no sign-up; operators create users with the CLI. */
  signup: 'open' | 'closed';
  /** Plan a self-signed-up account gets for its first month. */
  defaultPlan: string;
}

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env = process.env): Config {
  return {
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: path.resolve(env.DATA_DIR ?? 'data'),
    embeddedPostgresPort: integer(env, 'EMBEDDED_PG_PORT', 5488),
    host: env.HOST ?? '0.0.0.0',
    port: integer(env, 'PORT', 3000),
    logLevel: env.LOG_LEVEL ?? 'info',
    publicUrl: env.PUBLIC_URL || undefined,
    trustProxy: trustedProxies(env),
    requestTimeoutSeconds: integer(env, 'REQUEST_TIMEOUT_SECONDS', 60),
    shutdownGraceSeconds: integer(env, 'SHUTDOWN_GRACE_SECONDS', 25),

    maxImagePixels: integer(env, 'MAX_IMAGE_PIXELS', 50_000_000),
    normalisedLongSide: integer(env, 'NORMALISED_LONG_SIDE', 1600),

    readerChain: env.READER_CHAIN ? list(env.READER_CHAIN) : undefined,
    escalateBelow: integer(env, 'ESCALATE_BELOW', 80),
    readerTimeoutMs: integer(env, 'READER_TIMEOUT_MS', 30_000),
    readerRetries: integer(env, 'READER_RETRIES', 1),
    localModelDir: path.resolve(env.LOCAL_MODEL_DIR ?? path.join(import.meta.dirname, '..', 'models')),
    localReaderThreads: integer(env, 'LOCAL_READER_THREADS', Math.min(2, availableParallelism())),
    openai: {
      apiKey: env.OPENAI_API_KEY || undefined,
      baseUrl: env.OPENAI_BASE_URL || undefined,
      model: env.OPENAI_MODEL ?? 'gpt-5.4-mini',
    },
    anthropic: {
      apiKey: env.ANTHROPIC_API_KEY || undefined,
      baseUrl: env.ANTHROPIC_BASE_URL || undefined,
      model: env.ANTHROPIC_MODEL ?? 'claude-sonnet-5-5',
    },

    workerConcurrency: integer(env, 'WORKER_CONCURRENCY', 4),
    readJobExpireSeconds: integer(env, 'READ_JOB_EXPIRE_SECONDS', 150),
    readRetryDelaySeconds: integer(env, 'READ_RETRY_DELAY_SECONDS', 5),
    meterDeadlineSeconds: integer(env, 'METER_DEADLINE_SECONDS', 3600),
    queueSuperviseSeconds: integer(env, 'QUEUE_SUPERVISE_SECONDS', 5),
    queuePollSeconds: integer(env, 'QUEUE_POLL_SECONDS', 2),

    webhookAllowPrivate: env.WEBHOOK_ALLOW_PRIVATE === '1',
    webhookTimeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 10_000),
    webhookConcurrency: integer(env, 'WEBHOOK_CONCURRENCY', 16),
    webhookEndpointConcurrency: integer(env, 'WEBHOOK_ENDPOINT_CONCURRENCY', 2),

    imageRetentionDays: integer(env, 'IMAGE_RETENTION_DAYS', 90),
    webhookRetentionDays: integer(env, 'WEBHOOK_RETENTION_DAYS', 30),
    finishedJobRetentionDays: integer(env, 'FINISHED_JOB_RETENTION_DAYS', 7),

    metricsToken: env.METRICS_TOKEN || undefined,
    metricsPort: env.METRICS_PORT ? integer(env, 'METRICS_PORT', 0) : undefined,

    signup: env.SIGNUP === 'closed' ? 'closed' : 'open',
    defaultPlan: env.DEFAULT_PLAN ?? 'trial',
  };
}

function integer(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value)) throw new Error(`${name} must be an integer, got "${raw}"`);
  return value;
}

/** The private ranges a platform's router (Heroku, most load balancers) connects from. */
const PRIVATE_PROXY_RANGES = ['loopback', 'linklocal', 'uniquelocal'];

function trustedProxies(env: Env): string[] {
  const entries = list(env.TRUST_PROXY || 'private');
  if (entries.length === 1 && entries[0] === 'none') return [];
  return entries.flatMap((entry) => {
    if (entry === 'private') return PRIVATE_PROXY_RANGES;
    if (PRIVATE_PROXY_RANGES.includes(entry) || ipaddr.isValid(entry) || isCidr(entry)) return [entry];
    throw new Error(`TRUST_PROXY: "${entry}" is not an IP address, a CIDR range, private, none, loopback, linklocal or uniquelocal`);
  });
}

function isCidr(entry: string): boolean {
  try {
    ipaddr.parseCIDR(entry);
    return true;
  } catch {
    return false;
  }
}

function list(raw: string): string[] {
  return raw.split(',').map((item) => item.trim()).filter(Boolean);
}
