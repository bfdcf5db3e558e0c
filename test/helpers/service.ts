import type { FastifyInstance } from 'fastify';
import type { Test } from 'tap';
import { buildApp } from '../../src/app.ts';
import { createAccount } from '../../src/accounts/accounts.ts';
import { createApiKey } from '../../src/accounts/api-keys.ts';
import { cancelSubscription, setSubscription } from '../../src/accounts/subscriptions.ts';
import { createPlan } from '../../src/accounts/plans.ts';
import { loadConfig } from '../../src/config.ts';
import { createDatabase, type Db } from '../../src/db/database.ts';
import { PhotoStore } from '../../src/photos/store.ts';
import type { ServiceDeps } from '../../src/deps.ts';
import { createBoss, ensureQueues } from '../../src/queue.ts';
import { createReaderChain } from '../../src/readers/registry.ts';
import { startWorker } from '../../src/worker.ts';
import { startFakeOpenAI } from '../fakes/openai-server.ts';
import type { FakeBehaviour, FakeServer } from '../fakes/http-fake.ts';
import { createTestDatabase } from './database.ts';
import { freePort } from './ports.ts';

export interface TestService extends ServiceDeps {
  app: FastifyInstance;
  /** Base URL of the app listening on loopback, for real multipart uploads. */
  url: string;
  /** The fake OpenAI-compatible model server the reader chain talks to. */
  model: FakeServer;
  databaseUrl: string;
}

/**
 * The real app, queue and (unless `worker: false`) worker on a fresh database, reading through the real OpenAI reader
 * against a loopback fake of the OpenAI API. Everything is closed in teardown.
 */
export async function startTestService(
  t: Test,
  options: { env?: Record<string, string>; worker?: boolean; model?: FakeBehaviour } = {},
): Promise<TestService> {
  const database = await createTestDatabase();
  const model = await startFakeOpenAI(options.model);
  const port = await freePort();
  const config = loadConfig({
    DATABASE_URL: database.url,
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: 'silent',
    READER_CHAIN: 'openai',
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: 'sk-test',
    READER_TIMEOUT_MS: '2000',
    READER_RETRIES: '0',
    QUEUE_SUPERVISE_SECONDS: '1',
    WEBHOOK_ALLOW_PRIVATE: '1',
    ...options.env,
  });
  const db = createDatabase(database.url);
  const boss = createBoss(database.url, config, { supervise: true });
  // As in service.ts: a connection the server closes is reported, not a crash. Teardown drops the
  // database while pg-boss's scheduled workers may still hold one.
  boss.on('error', (error) => process.stderr.write(`# queue error: ${error.message}\n`));
  await boss.start();
  await ensureQueues(boss, config);
  const photos = new PhotoStore(config.photoStore);
  const readers = await createReaderChain(config);
  if (options.worker ?? true) await startWorker({ config, db, photos, boss, readers });
  const app = await buildApp({ config, db, photos, boss, readers }, { logger: false });
  const url = await app.listen({ port, host: '127.0.0.1' });
  t.teardown(async () => {
    await app.close();
    await boss.stop({ graceful: false });
    await db.destroy();
    await model.close();
    await database.drop();
  });
  return { config, db, photos, boss, readers, app, url, model, databaseUrl: database.url };
}

export type SubscriptionState = 'active' | 'expired' | 'cancelled' | 'none';

export interface Customer {
  accountId: string;
  keyId: string;
  key: string;
}

let planCounter = 0;

/** An account with an API key and, unless told otherwise, an active subscription. */
export async function createCustomer(
  db: Db,
  options: { subscription?: SubscriptionState; monthlyLimit?: number; keyStatus?: 'active' | 'inactive' } = {},
): Promise<Customer> {
  const account = await createAccount(db, { name: 'Test Utility' });
  const planCode = `test_plan_${process.pid}_${++planCounter}`;
  await createPlan(db, { code: planCode, name: 'Test plan', monthlyRequestLimit: options.monthlyLimit ?? 1000 });
  switch (options.subscription ?? 'active') {
    case 'active':
      await setSubscription(db, { accountId: account.id, planCode, months: 1 });
      break;
    case 'expired':
      await setSubscription(db, { accountId: account.id, planCode, until: new Date(Date.now() - 60_000) });
      break;
    case 'cancelled':
      await setSubscription(db, { accountId: account.id, planCode, months: 1 });
      await cancelSubscription(db, account.id);
      break;
  }
  const key = await createApiKey(db, { accountId: account.id, projectName: 'field app', status: options.keyStatus });
  return { accountId: account.id, keyId: key.id, key: key.key };
}

/** POSTs a photo as multipart/form-data, the way a client would. */
export async function submitPhoto(
  service: TestService,
  options: {
    key?: string;
    authorization?: string;
    image?: Buffer | null;
    field?: string;
    sync?: boolean;
    filename?: string;
    headers?: Record<string, string>;
    /** Text fields, sent before the file. */
    fields?: Record<string, string>;
  },
): Promise<{ status: number; headers: Headers; body: any }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(options.fields ?? {})) form.append(name, value);
  if (options.image !== null) {
    form.append(
      options.field ?? 'image',
      new Blob([options.image ?? Buffer.alloc(0)]),
      options.filename ?? 'meter.jpg',
    );
  }
  const headers: Record<string, string> = { ...options.headers };
  const authorization = options.authorization ?? (options.key ? `Bearer ${options.key}` : undefined);
  if (authorization !== undefined) headers.authorization = authorization;
  const response = await fetch(`${service.url}/api/meter-reading${options.sync ? '/sync' : ''}`, {
    method: 'POST',
    headers,
    body: form,
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** Polls `read` until `done` holds for its value, or returns the last value after `timeoutMs`. */
export async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Polls until the meter has finished (completed or failed), or gives up after `timeoutMs`. */
export function waitForMeter(db: Db, referenceId: string, timeoutMs = 30_000) {
  return waitFor(
    () => db.selectFrom('submissions').selectAll().where('reference_id', '=', referenceId).executeTakeFirstOrThrow(),
    (meter) => meter.status === 'completed' || meter.status === 'failed',
    timeoutMs,
  );
}
