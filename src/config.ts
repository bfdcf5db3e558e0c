import { availableParallelism } from 'node:os';
import path from 'node:path';
import { Type, type Static, type TLiteral, type TSchema, type TUnion } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import ipaddr from 'ipaddr.js';
import { USUAL_FACTOR, USUAL_FLOOR_M3, USUAL_SPREADS } from './plausibility-policy.ts';

/**
 * Every setting comes from the environment: each field is the variable of its name in ENVIRONMENT below, which
 * describes it.
 */
export interface Config {
  databaseUrl: string | undefined;
  dataDir: string;
  embeddedPostgresPort: number;
  host: string;
  port: number;
  logLevel: (typeof LOG_LEVELS)[number];
  publicUrl: string | undefined;
  /** TRUST_PROXY as Fastify's trustProxy list: `private` expanded to its ranges, `none` empty. */
  trustProxy: string[];
  requestTimeoutSeconds: number;
  maxConnections: number;
  shutdownGraceSeconds: number;

  maxImagePixels: number;
  normalisedLongSide: number;

  readerChain: string[] | undefined;
  escalateBelow: number;
  hostedEscalateBelow: number;
  readerTimeoutMs: number;
  readerRetries: number;
  localModelDir: string;
  localReaderThreads: number;
  openai: { apiKey: string | undefined; baseUrl: string | undefined; model: string };
  anthropic: { apiKey: string | undefined; baseUrl: string | undefined; model: string };

  workerConcurrency: number;
  readAccountConcurrency: number;
  readJobExpireSeconds: number;
  readRetryDelaySeconds: number;
  meterDeadlineSeconds: number;
  queueSuperviseSeconds: number;
  queuePollSeconds: number;

  webhookAllowPrivate: boolean;
  webhookTimeoutMs: number;
  webhookConcurrency: number;
  webhookEndpointConcurrency: number;
  webhookEndpointsPerAccount: number;

  /** When a meter needs a visit (src/meters/anomalies.ts). */
  anomaly: {
    stoppedDays: number;
    leakDays: number;
    leakFactor: number;
  };

  photoStore: {
    location: string;
    endpoint: string | undefined;
    region: string | undefined;
    credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  };
  imageRetentionDays: number;
  webhookRetentionDays: number;
  finishedJobRetentionDays: number;

  metricsToken: string | undefined;
  metricsPort: number | undefined;

  signup: 'open' | 'closed';
  defaultPlan: string;
  smtp: SmtpConfig | undefined;
}

/** SMTP_URL and MAIL_FROM. */
export interface SmtpConfig {
  url: string;
  from: string;
}

type Env = Record<string, string | undefined>;

/**
 * What docs/configuration.md and docs/.env.example say of a variable (`npm run docs:config` writes them):
 * `description` explains it, its first sentence saying on its own what it is (the .env.example's
 * line); `documentedDefault` states a default that is not one value (unset, computed, the vendor's
 * own); a variable with a `default` is documented with that value.
 */
interface Documented<Value> {
  default?: Value;
  documentedDefault?: string;
  description: string;
}

const integer = (fallback: number, options: { minimum: number; maximum?: number; description: string }) =>
  Type.Integer({ default: fallback, ...options });
const port = (options: Documented<number>) => Type.Integer({ minimum: 1, maximum: 65535, ...options });
const oneOf = <const Values extends string[]>(values: Values, options: Documented<Values[number]>) =>
  Type.Union(
    values.map((value) => Type.Literal(value)),
    options,
  ) as TUnion<{ [Index in keyof Values]: TLiteral<Values[Index]> }>;
const unsetString = (description: string, documentedDefault = 'unset') =>
  Type.Optional(Type.String({ description, documentedDefault }));

/** `database`, or an S3 bucket name (3–63 lower-case letters, digits, dots, hyphens) with an optional key prefix. */
const PHOTO_STORE_PATTERN = '^(database|s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?)$';

/** The weights the service reads with by default (LOCAL_MODEL_DIR unset): learned only from data open to commercial use. */
export const DEFAULT_MODEL_DIR = path.resolve(import.meta.dirname, '..', 'models');
/** The more accurate weights that also ship, learned from Toloka and BDCI 2020: not for commercial use. */
export const NONCOMMERCIAL_MODEL_DIR = path.join(DEFAULT_MODEL_DIR, 'noncommercial');

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The environment the service reads, each variable once: its type, range, default and description. */
export const ENVIRONMENT = Type.Object({
  DATABASE_URL: unsetString('PostgreSQL URL. Unset: an embedded PostgreSQL under `DATA_DIR`.'),
  DATA_DIR: Type.String({
    default: './data',
    description:
      'Where the embedded PostgreSQL keeps its data (`postgres/`) and log (`postgres.log`). As root it runs as the `postgres` user; where that user cannot reach this folder, `postgres/` links to the cluster in `/var/lib/meterlens/clusters/`.',
  }),
  EMBEDDED_PG_PORT: port({ default: 5488, description: 'Port of the embedded PostgreSQL (127.0.0.1 only).' }),
  // Read by test/run.ts (npm test); checked here with the rest.
  TEST_EMBEDDED_PG_PORT: Type.Optional(
    port({
      documentedDefault: 'a free port',
      description: "`npm test` only: port of the run's own embedded PostgreSQL.",
    }),
  ),
  PORT: port({ default: 3000, description: 'HTTP port.' }),
  HOST: Type.String({ default: '0.0.0.0', description: 'HTTP interface.' }),
  PUBLIC_URL: unsetString(
    "The service's own address, printed at start-up. The links in mails (email verification, password reset, invitations) and `meterlens users reset-link` point at it. Required with `SMTP_URL`, so that a mailed link never follows the `Host` a request named (a forged one would send a victim's reset link elsewhere). Without mail, an invitation link shown to pass on points at the host the owner's request came to.",
  ),
  TRUST_PROXY: Type.String({
    default: 'private',
    description:
      "The proxies whose `X-Forwarded-For`/`-Proto` are believed (client address for the sign-in and sign-up limits, https for Secure cookies). Comma-separated addresses and CIDR ranges (`203.0.113.7`, `10.0.0.0/8`, `2001:db8::/32`), `loopback`, `linklocal`, `uniquelocal`, `private` (all three: 127/8, ::1, 169.254/16, fe80::/10, 10/8, 172.16/12, 192.168/16, fc00::/7, which is where Heroku's and most platforms' routers connect from) or `none`. A client that connects from any other address is taken at its own address, whatever headers it sends; under the default `private`, any client that connects from a private address (another container, VM or host on the same network) can claim any client address (and `https`, which only decides whether its own cookies are marked Secure): it escapes the per-address sign-in and sign-up limits by claiming a new address each try (the per-email sign-in limit still holds). It cannot claim loopback for `/metrics` (docs/operations.md, \"Metrics\"). Name the proxy's exact addresses (or its subnet alone) wherever other clients share its network. Replaces `TRUST_PROXY_HOPS`.",
  }),
  REQUEST_TIMEOUT_SECONDS: integer(60, {
    minimum: 1,
    description:
      'A request whose headers or body have not fully arrived this long after it started is answered 408 (`request`) and its connection closed (headers trickling in: within a second of it). Only receiving counts: a sync reading may take longer once its upload is in. Idle keep-alive connections close after 72 s.',
  }),
  MAX_CONNECTIONS: integer(800, {
    minimum: 1,
    description:
      'Connections one web process keeps open at once (keep-alive ones included). A connection over it is closed at once, unanswered (the client sees the connection reset or closed before any response; a platform router answers its own 502/503 or tries another process), and the process logs a `connection closed unanswered` warning. The default stays under the usual limit of 1024 open files per process, leaving room for the database pool, hosted readers and files; raise both together.',
  }),
  SHUTDOWN_GRACE_SECONDS: integer(25, {
    minimum: 0,
    description:
      "After SIGTERM/SIGINT, how long requests and jobs in flight may finish (under Heroku's 30 s). Then open connections are cut, running jobs are failed back to the queue, the database (embedded) is stopped and the process exits.",
  }),
  LOG_LEVEL: oneOf([...LOG_LEVELS], {
    default: 'info',
    description: 'How much is logged: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`.',
  }),
  READER_CHAIN: unsetString(
    'Comma-separated readers tried in order, e.g. `local,openai`. Every name must be usable, or the service refuses to start. Unset: `local` when its weights are in `LOCAL_MODEL_DIR`, then `openai` if `OPENAI_API_KEY` is set, then `anthropic` if `ANTHROPIC_API_KEY` is set.',
    '`local`, then each hosted reader whose key is set',
  ),
  ESCALATE_BELOW: integer(97, {
    minimum: 0,
    maximum: 100,
    description:
      "A reading with confidence (0–100) below this goes on to the next reader. It applies to the `local` reader; hosted readers have their own threshold, below. With `models/noncommercial` (calibrated) the `local` reader's confidence is its estimated chance (in %) of being exact, and the default is at or above the lowest from which up at least 99% of the readings kept local were exact on photos that none of its networks had learned: on the validation photos it keeps 70% of Toloka's (99.1% of them exact) and 93% of bdci2020's (all exact); 99 keeps 62% of Toloka's, 99.0% exact, and 89% of bdci2020's, 100% exact (`models/noncommercial/MODEL_CARD.md`). The default `models/` carries no calibration (its confidence is the readers' product) and keeps 5.5% of Toloka's and 27% of bdci2020's (all exact) at 97 (`models/MODEL_CARD.md`).",
  }),
  HOSTED_ESCALATE_BELOW: integer(95, {
    minimum: 0,
    maximum: 100,
    description:
      "The same for a hosted reader (`openai`, `anthropic`): its answer with a confidence below this goes on to the next reader in the chain, if there is one. A hosted model's confidence is its own say-so, not calibrated, so it gets a threshold of its own: at the local reader's 97, a hosted answer at 96 would buy a second hosted answer.",
  }),
  READER_TIMEOUT_MS: integer(30_000, { minimum: 1, description: 'Timeout of one request to a hosted model.' }),
  READER_RETRIES: integer(1, { minimum: 0, description: 'Retries of a hosted model request (timeouts, 429, 5xx).' }),
  LOCAL_MODEL_DIR: unsetString(
    "Where the `local` reader's ONNX weights are. `./models` learned only from data open to commercial use; `./models/noncommercial` reads more exactly but learned from datasets that forbid commercial use (`models/MODEL_CARD.md`). The service logs the licence of the set it loads.",
    '`./models`',
  ),
  LOCAL_READER_THREADS: Type.Optional(
    Type.Integer({
      minimum: 1,
      documentedDefault: '2 (1 on a one-core machine)',
      description: 'Threads the `local` reader reads a photo on; it reads one photo at a time.',
    }),
  ),
  OPENAI_API_KEY: unsetString('Enables the `openai` reader in the default chain.'),
  OPENAI_BASE_URL: unsetString(
    'Any OpenAI-compatible server (vLLM, Ollama, …); with a base URL no key is needed.',
    'OpenAI',
  ),
  OPENAI_MODEL: Type.String({ default: 'gpt-5.4-mini', description: 'Model for the `openai` reader.' }),
  ANTHROPIC_API_KEY: unsetString('Enables the `anthropic` reader in the default chain.'),
  ANTHROPIC_BASE_URL: unsetString('Alternative Anthropic-compatible endpoint.', 'Anthropic'),
  ANTHROPIC_MODEL: Type.String({ default: 'claude-sonnet-5-5', description: 'Model for the `anthropic` reader.' }),
  MAX_IMAGE_PIXELS: integer(50_000_000, {
    minimum: 1,
    description:
      "Uploads with more pixels (of their first frame) are refused, from the file's header, before any pixel is decoded (the byte limit is fixed at 10 MB). 50 MP is well above any phone's photo; decoding one takes up to ~350 MB while it runs.",
  }),
  NORMALISED_LONG_SIDE: integer(1600, {
    minimum: 1,
    description:
      "Photos are turned upright and scaled to this long side (in pixels) when they are read (by the worker, or inline for sync), not in the ack. A process decodes at most half its cores' worth of photos at once (at least one), and together no more pixels than `MAX_IMAGE_PIXELS` (one photo at the limit, or several smaller ones); the others wait their turn, so a burst of large images costs time, not memory: a fresh web process peaked at 620 MB with 20 worst-case GIFs (50 MP) at once, 680–710 MB with acks meanwhile, on any number of cores (`bench/README.md`).",
  }),
  WORKER_CONCURRENCY: integer(4, { minimum: 1, description: 'Read jobs one worker process runs at once.' }),
  READ_ACCOUNT_CONCURRENCY: Type.Optional(
    Type.Integer({
      minimum: 1,
      documentedDefault: 'half of `WORKER_CONCURRENCY`, rounded up',
      description:
        "Read jobs of one account running at once, across all worker processes. An account's backlog (a drop of thousands of photos) never holds the other read slots, so another account's photo is read at once instead of after it (docs/operations.md, \"The database\"). A process's `local` reader reads one photo at a time, so two jobs keep it about as busy as four; with hosted readers one account alone is read this many at a time (`bench/README.md`, issue 44). With several worker processes, set it to about half of all their read slots; a single-tenant deployment on hosted readers, to all of them.",
    }),
  ),
  READ_JOB_EXPIRE_SECONDS: integer(150, {
    minimum: 1,
    description:
      "A read job running longer is taken as stuck and retried; keep it above the reader chain's worst case (each hosted reader: `READER_TIMEOUT_MS` × (`READER_RETRIES` + 1)). A dead worker is found sooner, by its missed heartbeats (below).",
  }),
  READ_RETRY_DELAY_SECONDS: integer(5, {
    minimum: 0,
    description: 'First delay before a read job is retried (then exponential backoff); a read is tried 3 times.',
  }),
  METER_DEADLINE_SECONDS: integer(3600, {
    minimum: 1,
    description: 'A submission still pending/processing after this is failed as `expired` (checked every minute).',
  }),
  QUEUE_SUPERVISE_SECONDS: integer(5, {
    minimum: 1,
    description: 'How often the worker looks for jobs whose worker died (missed heartbeats) or that expired.',
  }),
  QUEUE_POLL_SECONDS: integer(2, {
    minimum: 1,
    description: 'How often workers look for retries and scheduled webhook attempts (new jobs wake them at once).',
  }),
  WEBHOOK_ALLOW_PRIVATE: Type.Optional(
    oneOf(['0', '1'], {
      documentedDefault: 'unset',
      description:
        "`1` allows webhook URLs on non-public addresses: loopback, private, link-local, special-purpose ranges, this host's own addresses (tests, self-hosters); `0` or unset refuses them.",
    }),
  ),
  WEBHOOK_TIMEOUT_MS: integer(10_000, { minimum: 1, description: 'Timeout of one webhook attempt.' }),
  WEBHOOK_CONCURRENCY: integer(16, {
    minimum: 1,
    description: 'Webhook attempts one worker process runs at once (they wait on receivers, not the CPU).',
  }),
  WEBHOOK_ENDPOINT_CONCURRENCY: integer(2, {
    minimum: 1,
    description:
      "Webhook attempts in flight to one endpoint, across all workers: a slow or silent receiver never holds more, so other endpoints' webhooks are not delayed.",
  }),
  WEBHOOK_ENDPOINTS_PER_ACCOUNT: integer(10, {
    minimum: 1,
    description:
      'Webhook endpoints one account may have, enabled or disabled (every event is POSTed to each that subscribes to it). Adding one more is refused (dashboard and CLI); an account that already has more keeps them.',
  }),
  ANOMALY_STOPPED_DAYS: integer(30, {
    minimum: 1,
    maximum: 365,
    description:
      'A meter whose trusted readings stand still this many days (1–365), while they keep arriving and its history says it is used, has **stopped** (API, "Meters that need a visit"). Longer than most holidays; a camera that reads every hour may take a few days.',
  }),
  ANOMALY_LEAK_DAYS: integer(7, {
    minimum: 1,
    maximum: 365,
    description:
      "The span (1–365 days) over which a **leak** is measured: from the meter's newest trusted reading back to the last one at least this long before it (a month for a meter read monthly), its consumption against its usual.",
  }),
  ANOMALY_LEAK_FACTOR: Type.Number({
    default: 2,
    minimum: 1,
    maximum: 100,
    description: `A meter **leaks** when it uses more over the span than this many times its usual daily consumption (or its usual plus ${USUAL_SPREADS} spreads, if more) times the span's days, plus ${USUAL_FLOOR_M3} m³. A number from 1 to 100, e.g. \`1.5\`; a reading far above its usual (${USUAL_FACTOR} times) is already \`suspicious\`, so a leak below that is found from readings nobody has to look at.`,
  }),
  PHOTO_STORE: Type.String({
    default: 'database',
    pattern: PHOTO_STORE_PATTERN,
    accepts: 'database or s3://bucket/prefix',
    description:
      'Where photos go: `database` (in `submission_photos`, nothing else to run) or `s3://bucket/prefix`, an S3-compatible bucket through the AWS SDK (objects `<prefix>/<reference_id>/upload` and `…/upright.jpg`). See docs/operations.md, "Where photos live".',
  }),
  // The AWS SDK's own names, as its users set them.
  AWS_ENDPOINT_URL_S3: unsetString(
    'The S3 endpoint for `PHOTO_STORE=s3://…` (MinIO, Ceph, R2, …), addressed path-style; unset: AWS itself.',
  ),
  AWS_REGION: unsetString(
    "The bucket's region; unset: the SDK's own configuration, or `us-east-1` when an endpoint is given.",
  ),
  AWS_ACCESS_KEY_ID: unsetString(
    "With `AWS_SECRET_ACCESS_KEY`, the bucket's credentials; unset: the SDK's other sources (profile, instance role).",
  ),
  AWS_SECRET_ACCESS_KEY: unsetString('The secret of `AWS_ACCESS_KEY_ID`.'),
  IMAGE_RETENTION_DAYS: integer(90, {
    minimum: 0,
    description:
      'Photos of finished submissions older than this are deleted (every 10 minutes, 200 at a time); submissions and readings stay and the dashboard says the photo was removed. `0` keeps them forever.',
  }),
  WEBHOOK_RETENTION_DAYS: integer(30, {
    minimum: 0,
    description:
      'Delivered or failed webhook deliveries older than this are deleted with their attempts (by the job that deletes photos). `0` keeps them.',
  }),
  FINISHED_JOB_RETENTION_DAYS: integer(7, {
    minimum: 0,
    description:
      'pg-boss deletes finished jobs this long after they finished (its `deleteAfterSeconds`, applied by its own maintenance). `0` keeps them.',
  }),
  METRICS_TOKEN: unsetString(
    '`GET /metrics` requires `Authorization: Bearer <METRICS_TOKEN>`. Unset: it answers loopback clients that connect directly, not through a proxy (403 otherwise; see "Metrics").',
  ),
  METRICS_PORT: Type.Optional(
    port({
      documentedDefault: 'unset',
      description:
        'A worker-only process (`meterlens worker`) serves `/metrics` on this port (same protection). The web process serves it on `PORT`.',
    }),
  ),
  // Read where the connection is made (db/connect.ts), as libpq reads it.
  PGSSLMODE: Type.Optional(
    oneOf(['disable', 'allow', 'prefer', 'require', 'no-verify', 'verify-ca', 'verify-full'], {
      documentedDefault: 'unset',
      description:
        'TLS to PostgreSQL when `DATABASE_URL` has no `sslmode`: `require`/`no-verify` (Heroku Postgres), `verify-ca`/`verify-full`, or `disable`. See docs/operations.md, "Deployment".',
    }),
  ),
  SIGNUP: oneOf(['open', 'closed'], {
    default: 'open',
    description:
      "`closed` removes the dashboard's sign-up page; the operator then creates users with `meterlens users create`.",
  }),
  DEFAULT_PLAN: Type.String({
    default: 'trial',
    description:
      'Plan code a self-signed-up account gets for its first month (with `SMTP_URL`, from when its email is verified).',
  }),
  SMTP_URL: unsetString(
    'Mail server the service sends through: `smtp://user:password@host:587` (STARTTLS when offered) or `smtps://…:465` (TLS from the start); percent-encode special characters of the user and password. Set: a self-signed-up account gets its trial only once its user follows the link mailed to them; "Forgot password" mails a reset link; invitations are mailed. Needs `MAIL_FROM` and `PUBLIC_URL`. Unset: no mail is sent, sign-up gives the trial at once, invitation links are only shown to pass on, and reset links come from `meterlens users reset-link` (Dashboard).',
  ),
  MAIL_FROM: unsetString('The sender of every mail, e.g. `Meterlens <noreply@example.com>`; required with `SMTP_URL`.'),
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
  const problems = [
    ...schemaProblems(environment, env),
    ...[trustProxy, smtp].filter((setting) => typeof setting === 'string'),
  ];
  if (problems.length > 0 || typeof trustProxy === 'string' || typeof smtp === 'string')
    throw new ConfigError(problems);
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
    localModelDir: path.resolve(environment.LOCAL_MODEL_DIR ?? DEFAULT_MODEL_DIR),
    localReaderThreads: environment.LOCAL_READER_THREADS ?? Math.min(2, availableParallelism()),
    openai: {
      apiKey: environment.OPENAI_API_KEY,
      baseUrl: environment.OPENAI_BASE_URL,
      model: environment.OPENAI_MODEL,
    },
    anthropic: {
      apiKey: environment.ANTHROPIC_API_KEY,
      baseUrl: environment.ANTHROPIC_BASE_URL,
      model: environment.ANTHROPIC_MODEL,
    },

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
  const names = new Set(
    [...Value.Errors(ENVIRONMENT, environment)].map((error) => error.path.slice(1) as keyof Environment),
  );
  return [...names].map((name) => `${name}: "${env[name]}" is not ${expected(ENVIRONMENT.properties[name])}`);
}

/** What a variable's schema accepts, in words (a pattern's, its `accepts`). */
function expected(schema: TSchema): string {
  if (schema.pattern) return String(schema.accepts);
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
  const unknown = entries.find(
    (entry) => !(entry === 'private' || PRIVATE_PROXY_RANGES.includes(entry) || ipaddr.isValid(entry) || isCidr(entry)),
  );
  if (unknown !== undefined)
    return `TRUST_PROXY: "${unknown}" is not an IP address, a CIDR range, private, none, loopback, linklocal or uniquelocal`;
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
  if (environment.PUBLIC_URL === undefined)
    return "PUBLIC_URL: unset, but SMTP_URL needs it: links in mails point at the service's own address";
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
