import { availableParallelism } from 'node:os';
import path from 'node:path';
import { Type, type Static, type TLiteral, type TSchema, type TUnion } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import ipaddr from 'ipaddr.js';

/** Every setting comes from the environment (ENVIRONMENT below); README's configuration table lists them all. */
export interface Config {
  /** Unset: an embedded PostgreSQL is started under `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  embeddedPostgresPort: number;
  host: string;
  port: number;
  logLevel: (typeof LOG_LEVELS)[number];
  /** Public base URL printed at start-up and used in links. */
  publicUrl: string | undefined;
  /**
   * Addresses and CIDR ranges of the proxies whose X-Forwarded-* headers are believed (Fastify's
   * trustProxy list; `loopback`, `linklocal`, `uniquelocal` name ranges). Empty: none is, so a
   * client connecting directly cannot claim another address.
   */
  trustProxy: string[];
  /** A request whose headers or body have not fully arrived this long after it started is answered 408 and closed. */
  requestTimeoutSeconds: number;
  /** Connections one web process holds open at once; one over it is closed at once, unanswered. */
  maxConnections: number;
  /** After SIGTERM: how long requests and jobs in flight may finish before connections are cut and jobs left to the queue. */
  shutdownGraceSeconds: number;

  maxImagePixels: number;
  /** Long side of the normalised image handed to readers. */
  normalisedLongSide: number;

  /** Reader names in the order they are tried; undefined = the default chain. */
  readerChain: string[] | undefined;
  /** A local reading below this (calibrated) confidence is escalated to the next reader in the chain. */
  escalateBelow: number;
  /** A hosted reading below this (self-reported) confidence is escalated to the next reader in the chain. */
  hostedEscalateBelow: number;
  readerTimeoutMs: number;
  readerRetries: number;
  localModelDir: string;
  /** Threads the local reader reads one photo on (photos are read one at a time). */
  localReaderThreads: number;
  openai: { apiKey: string | undefined; baseUrl: string | undefined; model: string };
  anthropic: { apiKey: string | undefined; baseUrl: string | undefined; model: string };

  workerConcurrency: number;
  /** Read jobs of one account running at once, across all workers: a busy account leaves the other read slots to the rest. */
  readAccountConcurrency: number;
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
  /** Webhook endpoints one account may have: each event is POSTed to every one of them. */
  webhookEndpointsPerAccount: number;

  /** When a meter needs a visit (src/meters/anomalies.ts). */
  anomaly: {
    /** Trusted readings standing still this many days, while the meter's history says it is used: stopped. */
    stoppedDays: number;
    /** The span, in days, a leak's consumption is measured over. */
    leakDays: number;
    /** Consumption over the span above this many times the usual (or usual plus its spreads) is a leak. */
    leakFactor: number;
  };

  /**
   * Where new photos go: `database` (meter_images' bytea columns) or `s3://bucket/prefix`, with the
   * S3 endpoint (unset: AWS), region and key as the AWS SDK's own variables give them; without a
   * key, the SDK's other sources (profiles, instance roles).
   */
  photoStore: {
    location: string;
    endpoint: string | undefined;
    region: string | undefined;
    credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  };
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
  /**
   * Where and as whom the service sends mail (src/mail.ts); undefined: it sends none, and a
   * self-signed-up account's trial starts without its email being verified.
   */
  smtp: SmtpConfig | undefined;
}

export interface SmtpConfig {
  /** smtp://user:pass@host:port (STARTTLS when the server offers it) or smtps:// (TLS from the start). */
  url: string;
  /** The From of every mail, e.g. `Meterlens <noreply@example.com>`. */
  from: string;
}

type Env = Record<string, string | undefined>;

/**
 * `documentedDefault`: how README's configuration table states a default that is not one value
 * (unset, computed, the vendor's own); a variable with a `default` is documented with that value.
 */
interface Defaults<Value> {
  default?: Value;
  documentedDefault?: string;
}

const integer = (fallback: number, range: { minimum: number; maximum?: number }) => Type.Integer({ default: fallback, ...range });
const port = (defaults: Defaults<number>) => Type.Integer({ minimum: 1, maximum: 65535, ...defaults });
const oneOf = <const Values extends string[]>(values: Values, defaults: Defaults<Values[number]>) =>
  Type.Union(
    values.map((value) => Type.Literal(value)),
    defaults,
  ) as TUnion<{ [Index in keyof Values]: TLiteral<Values[Index]> }>;
const unsetString = (documentedDefault = 'unset') => Type.Optional(Type.String({ documentedDefault }));

/** `database`, or an S3 bucket name (3–63 lower-case letters, digits, dots, hyphens) with an optional key prefix. */
const PHOTO_STORE_PATTERN = '^(database|s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?)$';

/** The weights that ship with Meterlens, where LOCAL_MODEL_DIR points by default. */
export const SHIPPED_MODEL_DIR = path.resolve(import.meta.dirname, '..', 'models');

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The environment the service reads, each variable once: its type, range and default. */
export const ENVIRONMENT = Type.Object({
  DATABASE_URL: unsetString(),
  DATA_DIR: Type.String({ default: './data' }),
  EMBEDDED_PG_PORT: port({ default: 5488 }),
  // Read by test/run.ts (npm test); checked here with the rest.
  TEST_EMBEDDED_PG_PORT: Type.Optional(port({ documentedDefault: 'a free port' })),
  PORT: port({ default: 3000 }),
  HOST: Type.String({ default: '0.0.0.0' }),
  PUBLIC_URL: unsetString(),
  TRUST_PROXY: Type.String({ default: 'private' }),
  REQUEST_TIMEOUT_SECONDS: integer(60, { minimum: 1 }),
  MAX_CONNECTIONS: integer(800, { minimum: 1 }),
  SHUTDOWN_GRACE_SECONDS: integer(25, { minimum: 0 }),
  LOG_LEVEL: oneOf([...LOG_LEVELS], { default: 'info' }),
  READER_CHAIN: unsetString('see below'),
  ESCALATE_BELOW: integer(97, { minimum: 0, maximum: 100 }),
  HOSTED_ESCALATE_BELOW: integer(95, { minimum: 0, maximum: 100 }),
  READER_TIMEOUT_MS: integer(30_000, { minimum: 1 }),
  READER_RETRIES: integer(1, { minimum: 0 }),
  LOCAL_MODEL_DIR: unsetString('`./models`'),
  LOCAL_READER_THREADS: Type.Optional(Type.Integer({ minimum: 1, documentedDefault: '2 (1 on a one-core machine)' })),
  OPENAI_API_KEY: unsetString(),
  OPENAI_BASE_URL: unsetString('OpenAI'),
  OPENAI_MODEL: Type.String({ default: 'gpt-5.4-mini' }),
  ANTHROPIC_API_KEY: unsetString(),
  ANTHROPIC_BASE_URL: unsetString('Anthropic'),
  ANTHROPIC_MODEL: Type.String({ default: 'claude-sonnet-5-5' }),
  MAX_IMAGE_PIXELS: integer(50_000_000, { minimum: 1 }),
  NORMALISED_LONG_SIDE: integer(1600, { minimum: 1 }),
  WORKER_CONCURRENCY: integer(4, { minimum: 1 }),
  READ_ACCOUNT_CONCURRENCY: Type.Optional(Type.Integer({ minimum: 1, documentedDefault: 'half of `WORKER_CONCURRENCY`, rounded up' })),
  READ_JOB_EXPIRE_SECONDS: integer(150, { minimum: 1 }),
  READ_RETRY_DELAY_SECONDS: integer(5, { minimum: 0 }),
  METER_DEADLINE_SECONDS: integer(3600, { minimum: 1 }),
  QUEUE_SUPERVISE_SECONDS: integer(5, { minimum: 1 }),
  QUEUE_POLL_SECONDS: integer(2, { minimum: 1 }),
  WEBHOOK_ALLOW_PRIVATE: Type.Optional(oneOf(['0', '1'], { documentedDefault: 'unset' })),
  WEBHOOK_TIMEOUT_MS: integer(10_000, { minimum: 1 }),
  WEBHOOK_CONCURRENCY: integer(16, { minimum: 1 }),
  WEBHOOK_ENDPOINT_CONCURRENCY: integer(2, { minimum: 1 }),
  WEBHOOK_ENDPOINTS_PER_ACCOUNT: integer(10, { minimum: 1 }),
  ANOMALY_STOPPED_DAYS: integer(30, { minimum: 1, maximum: 365 }),
  ANOMALY_LEAK_DAYS: integer(7, { minimum: 1, maximum: 365 }),
  ANOMALY_LEAK_FACTOR: Type.Number({ default: 2, minimum: 1, maximum: 100 }),
  PHOTO_STORE: Type.String({ default: 'database', pattern: PHOTO_STORE_PATTERN, description: 'database or s3://bucket/prefix' }),
  // The AWS SDK's own names, as its users set them.
  AWS_ENDPOINT_URL_S3: unsetString(),
  AWS_REGION: unsetString(),
  AWS_ACCESS_KEY_ID: unsetString(),
  AWS_SECRET_ACCESS_KEY: unsetString(),
  IMAGE_RETENTION_DAYS: integer(90, { minimum: 0 }),
  WEBHOOK_RETENTION_DAYS: integer(30, { minimum: 0 }),
  FINISHED_JOB_RETENTION_DAYS: integer(7, { minimum: 0 }),
  METRICS_TOKEN: unsetString(),
  METRICS_PORT: Type.Optional(port({ documentedDefault: 'unset' })),
  // Read where the connection is made (db/connect.ts), as libpq reads it.
  PGSSLMODE: Type.Optional(oneOf(['disable', 'allow', 'prefer', 'require', 'no-verify', 'verify-ca', 'verify-full'], { documentedDefault: 'unset' })),
  SIGNUP: oneOf(['open', 'closed'], { default: 'open' }),
  DEFAULT_PLAN: Type.String({ default: 'trial' }),
  SMTP_URL: unsetString(),
  MAIL_FROM: unsetString(),
});
export type Environment = Static<typeof ENVIRONMENT>;

/** The configuration is refused at start-up; the message names every bad variable, one a line. */
export class ConfigError extends Error {
  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((problem) => `  ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: Env = process.env): Config {
  const environment = withDefaults(env);
  const trustProxy = trustedProxies(environment.TRUST_PROXY);
  const smtp = smtpConfig(environment);
  const problems = [...schemaProblems(environment, env), ...[trustProxy, smtp].filter((setting) => typeof setting === 'string')];
  if (problems.length > 0 || typeof trustProxy === 'string' || typeof smtp === 'string') throw new ConfigError(problems);
  return {
    databaseUrl: environment.DATABASE_URL,
    dataDir: path.resolve(environment.DATA_DIR),
    embeddedPostgresPort: environment.EMBEDDED_PG_PORT,
    host: environment.HOST,
    port: environment.PORT,
    logLevel: environment.LOG_LEVEL,
    publicUrl: environment.PUBLIC_URL,
    trustProxy,
    requestTimeoutSeconds: environment.REQUEST_TIMEOUT_SECONDS,
    maxConnections: environment.MAX_CONNECTIONS,
    shutdownGraceSeconds: environment.SHUTDOWN_GRACE_SECONDS,

    maxImagePixels: environment.MAX_IMAGE_PIXELS,
    normalisedLongSide: environment.NORMALISED_LONG_SIDE,

    readerChain: environment.READER_CHAIN === undefined ? undefined : list(environment.READER_CHAIN),
    escalateBelow: environment.ESCALATE_BELOW,
    hostedEscalateBelow: environment.HOSTED_ESCALATE_BELOW,
    readerTimeoutMs: environment.READER_TIMEOUT_MS,
    readerRetries: environment.READER_RETRIES,
    // The shipped weights are found from any working directory; a given path is the operator's own.
    localModelDir: path.resolve(environment.LOCAL_MODEL_DIR ?? SHIPPED_MODEL_DIR),
    localReaderThreads: environment.LOCAL_READER_THREADS ?? Math.min(2, availableParallelism()),
    openai: { apiKey: environment.OPENAI_API_KEY, baseUrl: environment.OPENAI_BASE_URL, model: environment.OPENAI_MODEL },
    anthropic: { apiKey: environment.ANTHROPIC_API_KEY, baseUrl: environment.ANTHROPIC_BASE_URL, model: environment.ANTHROPIC_MODEL },

    workerConcurrency: environment.WORKER_CONCURRENCY,
    readAccountConcurrency: environment.READ_ACCOUNT_CONCURRENCY ?? Math.ceil(environment.WORKER_CONCURRENCY / 2),
    readJobExpireSeconds: environment.READ_JOB_EXPIRE_SECONDS,
    readRetryDelaySeconds: environment.READ_RETRY_DELAY_SECONDS,
    meterDeadlineSeconds: environment.METER_DEADLINE_SECONDS,
    queueSuperviseSeconds: environment.QUEUE_SUPERVISE_SECONDS,
    queuePollSeconds: environment.QUEUE_POLL_SECONDS,

    webhookAllowPrivate: environment.WEBHOOK_ALLOW_PRIVATE === '1',
    webhookTimeoutMs: environment.WEBHOOK_TIMEOUT_MS,
    webhookConcurrency: environment.WEBHOOK_CONCURRENCY,
    webhookEndpointConcurrency: environment.WEBHOOK_ENDPOINT_CONCURRENCY,
    webhookEndpointsPerAccount: environment.WEBHOOK_ENDPOINTS_PER_ACCOUNT,

    anomaly: {
      stoppedDays: environment.ANOMALY_STOPPED_DAYS,
      leakDays: environment.ANOMALY_LEAK_DAYS,
      leakFactor: environment.ANOMALY_LEAK_FACTOR,
    },

    photoStore: {
      location: environment.PHOTO_STORE,
      endpoint: environment.AWS_ENDPOINT_URL_S3,
      region: environment.AWS_REGION,
      credentials:
        environment.AWS_ACCESS_KEY_ID && environment.AWS_SECRET_ACCESS_KEY
          ? { accessKeyId: environment.AWS_ACCESS_KEY_ID, secretAccessKey: environment.AWS_SECRET_ACCESS_KEY }
          : undefined,
    },
    imageRetentionDays: environment.IMAGE_RETENTION_DAYS,
    webhookRetentionDays: environment.WEBHOOK_RETENTION_DAYS,
    finishedJobRetentionDays: environment.FINISHED_JOB_RETENTION_DAYS,

    metricsToken: environment.METRICS_TOKEN,
    metricsPort: environment.METRICS_PORT,

    signup: environment.SIGNUP,
    defaultPlan: environment.DEFAULT_PLAN,
    smtp,
  };
}

/**
 * The variables of ENVIRONMENT with defaults filled in, typed as they will be once checked. An
 * empty value counts as unset. Integers are taken only as written in digits ("1e3", "5.0" and " 5"
 * stay strings, which the check refuses), other numbers as digits with a decimal point ("1.5").
 */
function withDefaults(env: Env): Environment {
  const given: Record<string, string | number> = {};
  for (const [name, schema] of Object.entries(ENVIRONMENT.properties)) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const digits = schema.type === 'integer' ? /^-?\d+$/ : /^-?\d+(\.\d+)?$/;
    given[name] = (schema.type === 'integer' || schema.type === 'number') && digits.test(raw) ? Number(raw) : raw;
  }
  return Value.Default(ENVIRONMENT, given) as Environment;
}

/** One line per variable the schema refuses, naming it, its value and what it must be. */
function schemaProblems(environment: Environment, env: Env): string[] {
  const names = new Set([...Value.Errors(ENVIRONMENT, environment)].map((error) => error.path.slice(1) as keyof Environment));
  return [...names].map((name) => `${name}: "${env[name]}" is not ${expected(ENVIRONMENT.properties[name])}`);
}

/** What a variable's schema accepts, in words. */
function expected(schema: TSchema): string {
  if (schema.pattern) return String(schema.description);
  if (schema.anyOf) return `one of ${schema.anyOf.map((literal: TLiteral) => literal.const).join(', ')}`;
  if (schema.type === 'integer' || schema.type === 'number') {
    const kind = schema.type === 'integer' ? 'an integer' : 'a number';
    if (schema.maximum !== undefined) return `${kind} from ${schema.minimum} to ${schema.maximum}`;
    return `${kind} of at least ${schema.minimum}`;
  }
  return `a ${schema.type}`;
}

/** The private ranges a platform's router (Heroku, most load balancers) connects from. */
const PRIVATE_PROXY_RANGES = ['loopback', 'linklocal', 'uniquelocal'];

/** The trusted proxies, or what is wrong with TRUST_PROXY. */
function trustedProxies(setting: string): string[] | string {
  const entries = list(setting);
  if (entries.length === 1 && entries[0] === 'none') return [];
  const unknown = entries.find((entry) => !(entry === 'private' || PRIVATE_PROXY_RANGES.includes(entry) || ipaddr.isValid(entry) || isCidr(entry)));
  if (unknown !== undefined) return `TRUST_PROXY: "${unknown}" is not an IP address, a CIDR range, private, none, loopback, linklocal or uniquelocal`;
  return entries.flatMap((entry) => (entry === 'private' ? PRIVATE_PROXY_RANGES : [entry]));
}

/** The mail settings (none without SMTP_URL), or what is wrong with them. */
function smtpConfig(environment: Environment): SmtpConfig | undefined | string {
  const url = environment.SMTP_URL;
  if (url === undefined) return undefined;
  // Not echoed: the URL may hold the SMTP password.
  if (!/^smtps?:$/.test(URL.parse(url)?.protocol ?? '')) return 'SMTP_URL: is not an smtp:// or smtps:// URL';
  if (environment.MAIL_FROM === undefined) return 'MAIL_FROM: unset, but SMTP_URL needs a sender address';
  // A mailed link built from a request's Host would let anyone who asks for a password reset point the
  // victim's link at their own host.
  if (environment.PUBLIC_URL === undefined) return "PUBLIC_URL: unset, but SMTP_URL needs it: links in mails point at the service's own address";
  return { url, from: environment.MAIL_FROM };
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
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}
