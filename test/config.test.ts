import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { configDocs, undescribed } from '../src/config-docs.ts';
import { ConfigError, ENVIRONMENT, loadConfig } from '../src/config.ts';

t.test('refuses bad values with one message naming every bad variable', async (t) => {
  const env = {
    SIGNUP: 'close',
    LOG_LEVEL: 'loud',
    ESCALATE_BELOW: '800',
    WORKER_CONCURRENCY: '0',
    PORT: '1e3',
    TRUST_PROXY: 'heroku',
  };
  const error = t.throws(() => loadConfig(env)) as Error;
  t.type(error, ConfigError);
  const lines = error.message
    .split('\n')
    .slice(1)
    .map((line) => line.trim());
  t.same(lines.map((line) => line.split(':')[0]).sort(), Object.keys(env).sort(), 'one line per bad variable');
  t.match(error.message, /SIGNUP: "close" is not one of open, closed/);
  t.match(error.message, /LOG_LEVEL: "loud" is not one of fatal, error, warn, info, debug, trace, silent/);
  t.match(error.message, /ESCALATE_BELOW: "800" is not an integer from 0 to 100/);
  t.match(error.message, /WORKER_CONCURRENCY: "0" is not an integer of at least 1/);
  t.match(error.message, /PORT: "1e3" is not an integer from 1 to 65535/);
});

t.test('meterlens refuses to start with the message, not a stack trace', async (t) => {
  const meterlens = path.join(import.meta.dirname, '..', 'bin', 'meterlens.js');
  const env = { ...process.env, SIGNUP: 'close', WORKER_CONCURRENCY: '0' };
  const { code, stderr } = await promisify(execFile)(process.execPath, [meterlens, 'migrate'], { env }).then(
    ({ stderr }) => ({ code: 0, stderr }),
    (error: { code: number; stderr: string }) => error,
  );
  t.equal(code, 1);
  t.equal(
    stderr,
    'meterlens: invalid configuration:\n  WORKER_CONCURRENCY: "0" is not an integer of at least 1\n  SIGNUP: "close" is not one of open, closed\n',
  );
});

t.test('takes integers only as digits, and an empty value as unset', async (t) => {
  for (const value of ['5.0', ' 5', '0x5', 'five'])
    t.throws(() => loadConfig({ WORKER_CONCURRENCY: value }), ConfigError, value);
  t.equal(loadConfig({ WORKER_CONCURRENCY: '7' }).workerConcurrency, 7);
  t.equal(loadConfig({ WORKER_CONCURRENCY: '', DATABASE_URL: '' }).workerConcurrency, 4);
  t.equal(loadConfig({ DATABASE_URL: '' }).databaseUrl, undefined);
});

t.test('defaults and the enums that are taken', async (t) => {
  const config = loadConfig({});
  t.equal(config.signup, 'open');
  t.equal(config.logLevel, 'info');
  t.equal(config.escalateBelow, 97);
  t.equal(config.hostedEscalateBelow, 95);
  t.equal(config.webhookAllowPrivate, false);
  t.equal(config.metricsPort, undefined);
  t.equal(loadConfig({ SIGNUP: 'closed' }).signup, 'closed');
  t.equal(loadConfig({ WEBHOOK_ALLOW_PRIVATE: '1' }).webhookAllowPrivate, true);
  t.throws(() => loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'yes' }), /WEBHOOK_ALLOW_PRIVATE: "yes" is not one of 0, 1/);
  t.throws(() => loadConfig({ PGSSLMODE: 'requre' }), /PGSSLMODE: "requre" is not one of/);
  t.throws(
    () => loadConfig({ PHOTO_STORE: 'bucket/photos' }),
    /PHOTO_STORE: "bucket\/photos" is not database or s3:\/\/bucket\/prefix/,
  );
  t.throws(() => loadConfig({ PHOTO_STORE: 's3://Bad_Bucket' }), /PHOTO_STORE/);
});

t.test('PHOTO_STORE and the AWS SDK variables', async (t) => {
  t.same(loadConfig({}).photoStore, {
    location: 'database',
    endpoint: undefined,
    region: undefined,
    credentials: undefined,
  });
  const s3 = loadConfig({
    PHOTO_STORE: 's3://meter-photos/prod',
    AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9000',
    AWS_ACCESS_KEY_ID: 'id',
    AWS_SECRET_ACCESS_KEY: 'secret',
  }).photoStore;
  t.same(s3, {
    location: 's3://meter-photos/prod',
    endpoint: 'http://127.0.0.1:9000',
    region: undefined,
    credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
  });
  t.equal(
    loadConfig({ AWS_ACCESS_KEY_ID: 'id' }).photoStore.credentials,
    undefined,
    'a key id alone leaves the credentials to the SDK',
  );
});

t.test(
  'mail: SMTP_URL needs MAIL_FROM, PUBLIC_URL and an smtp:// or smtps:// URL, which no message repeats',
  async (t) => {
    t.equal(loadConfig({}).smtp, undefined, 'unset: no mail');
    const PUBLIC_URL = 'https://meters.example.com';
    t.same(
      loadConfig({
        SMTP_URL: 'smtps://u:p@mail.example.com:465',
        MAIL_FROM: 'Meterlens <noreply@example.com>',
        PUBLIC_URL,
      }).smtp,
      {
        url: 'smtps://u:p@mail.example.com:465',
        from: 'Meterlens <noreply@example.com>',
      },
    );
    t.throws(
      () => loadConfig({ SMTP_URL: 'smtp://u:p@mail.example.com', PUBLIC_URL }),
      /MAIL_FROM: unset, but SMTP_URL needs a sender address/,
    );
    t.throws(
      () => loadConfig({ SMTP_URL: 'smtp://u:p@mail.example.com', MAIL_FROM: 'a@example.com' }),
      /PUBLIC_URL: unset, but SMTP_URL needs it: links in mails point at the service's own address/,
      'a mailed link never follows the Host a request named',
    );
    const error = t.throws(() =>
      loadConfig({ SMTP_URL: 'https://user:hunter2@mail.example.com', MAIL_FROM: 'a@example.com' }),
    ) as Error;
    t.match(error.message, 'SMTP_URL: is not an smtp:// or smtps:// URL');
    t.notMatch(error.message, 'hunter2', 'the password stays out of the message');
  },
);

t.test('anomaly settings: whole days, and a leak factor that may have decimals', async (t) => {
  t.same(loadConfig({}).anomaly, { stoppedDays: 30, leakDays: 7, leakFactor: 2 });
  t.same(loadConfig({ ANOMALY_STOPPED_DAYS: '3', ANOMALY_LEAK_DAYS: '1', ANOMALY_LEAK_FACTOR: '1.5' }).anomaly, {
    stoppedDays: 3,
    leakDays: 1,
    leakFactor: 1.5,
  });
  t.throws(
    () => loadConfig({ ANOMALY_STOPPED_DAYS: '0' }),
    /ANOMALY_STOPPED_DAYS: "0" is not an integer from 1 to 365/,
  );
  t.throws(() => loadConfig({ ANOMALY_LEAK_DAYS: '2.5' }), /ANOMALY_LEAK_DAYS: "2.5" is not an integer from 1 to 365/);
  for (const value of ['0.5', '101', '1e1', '1,5', 'two', ' 2'])
    t.throws(
      () => loadConfig({ ANOMALY_LEAK_FACTOR: value }),
      new RegExp(`ANOMALY_LEAK_FACTOR: "${value}" is not a number from 1 to 100`),
      value,
    );
});

t.test("an account's share of the read slots is half of a worker's unless set", async (t) => {
  t.equal(loadConfig({}).readAccountConcurrency, 2);
  t.equal(loadConfig({ WORKER_CONCURRENCY: '7' }).readAccountConcurrency, 4);
  t.equal(loadConfig({ WORKER_CONCURRENCY: '1' }).readAccountConcurrency, 1);
  t.equal(loadConfig({ READ_ACCOUNT_CONCURRENCY: '8' }).readAccountConcurrency, 8);
  t.throws(
    () => loadConfig({ READ_ACCOUNT_CONCURRENCY: '0' }),
    /READ_ACCOUNT_CONCURRENCY: "0" is not an integer of at least 1/,
  );
});

t.test('every variable has a description, on one line', async (t) => {
  t.same(undescribed(), []);
});

t.test(
  'docs/configuration.md and docs/.env.example are what the schema generates (npm run docs:config writes them)',
  async (t) => {
    for (const [file, generated] of Object.entries(configDocs())) {
      const written = await readFile(path.join(import.meta.dirname, '..', file), 'utf8').catch(
        () => `${file} is missing`,
      );
      t.equal(written, generated, `${file} is up to date`);
    }
  },
);

t.test('the generated files list each variable once, with its default', async (t) => {
  const docs = configDocs();
  const names = Object.keys(ENVIRONMENT.properties);
  t.same(
    [...docs['docs/configuration.md']!.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((row) => row[1]),
    names,
  );
  t.same(
    [...docs['docs/.env.example']!.matchAll(/^# ([A-Z0-9_]+)=/gm)].map((line) => line[1]),
    names,
  );
  t.match(docs['docs/configuration.md'], '| `WORKER_CONCURRENCY` | `4` | Read jobs one worker process runs at once. |');
  t.match(docs['docs/configuration.md'], '| `DATABASE_URL` | unset | PostgreSQL URL.');
  t.match(docs['docs/.env.example'], '# Read jobs one worker process runs at once.\n# WORKER_CONCURRENCY=4\n');
  t.match(
    docs['docs/.env.example'],
    '# Threads the `local` reader reads a photo on; it reads one photo at a time. Default: 2 (1 on a one-core machine).\n# LOCAL_READER_THREADS=\n',
  );
  t.match(
    docs['docs/.env.example'],
    "# Uploads with more pixels (of their first frame) are refused, from the file's header, before any pixel is decoded (the byte limit is fixed at 10 MB).\n# MAX_IMAGE_PIXELS=50000000\n",
    'the first sentence',
  );
  t.match(
    docs['docs/.env.example'],
    '# Comma-separated readers tried in order, e.g. `local,openai`.',
    'e.g. ends no sentence',
  );
});

t.test('docs/.env.example with every variable uncommented configures the defaults', async (t) => {
  const assignments = [...configDocs()['docs/.env.example']!.matchAll(/^# ([A-Z0-9_]+)=(.*)$/gm)];
  t.same(loadConfig(Object.fromEntries(assignments.map(([, name, value]) => [name, value]))), loadConfig({}));
});
