import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import t from 'tap';
import { API_KEY_PATTERN, hashApiKey } from '../../src/accounts/api-key-format.ts';
import { verifyPassword } from '../../src/accounts/passwords.ts';
import { WEBHOOK_EVENTS } from '../../src/webhooks/events.ts';
import { newWebhookSecret } from '../../src/webhooks/signature.ts';
import { startCli } from '../helpers/cli.ts';

const { db, scratch, meterlens, json } = await startCli(t);

t.test('help lists every command', async (t) => {
  for (const args of [[], ['help']]) {
    const run = await meterlens(args);
    t.equal(run.code, 0);
    for (const command of [
      'serve',
      'web',
      'worker',
      'migrate',
      'plans create',
      'plans list',
      'accounts create',
      'accounts list',
      'subscriptions show',
      'subscriptions set',
      'subscriptions cancel',
      'keys create',
      'keys list',
      'keys enable',
      'keys disable',
      'keys delete',
      'webhooks add',
      'webhooks list',
      'webhooks enable',
      'webhooks disable',
      'webhooks delete',
      'users create',
      'users list',
      'users reset-link',
      'read',
      'eval',
      'train',
      'models promote',
      'models rollback',
    ]) {
      t.match(run.stdout, `meterlens ${command}`, command);
    }
  }
});

t.test('GROUP --help lists the commands of that group, and only those', async (t) => {
  const groups = ['plans', 'accounts', 'subscriptions', 'keys', 'webhooks', 'users', 'meters', 'dataset', 'models'];
  const help = new Map<string, string>();
  for (const [index, group] of groups.entries()) {
    const flag = index === 0 ? '-h' : '--help';
    const run = await meterlens([group, flag]);
    help.set(group, run.stdout);
    t.match(run, { code: 0, stderr: '' }, `${group} ${flag}`);
    const named = [...run.stdout.matchAll(/^ {2}meterlens (\S+) /gm)].map((match) => match[1]);
    t.ok(named.length > 0 && named.every((name) => name === group), `${group} ${flag} lists its own commands`);
  }
  t.match(help.get('webhooks'), /meterlens webhooks delete ID\n +delete a webhook endpoint/);
  t.match(await meterlens(['users']), {
    code: 2,
    stderr: /"users" takes: create, list, reset-link \(meterlens users --help\)/,
  });
});

t.test('plans create and list', async (t) => {
  t.match(await json(['plans', 'create', '--code', 'gold', '--name', 'Gold', '--limit', '5000']), {
    code: 'gold',
    name: 'Gold',
    monthlyRequestLimit: 5000,
  });
  const { plans } = await json(['plans', 'list']);
  t.same(
    plans.map((plan: { code: string }) => plan.code),
    ['trial', 'starter', 'gold', 'pro', 'scale'],
  );
  const human = await meterlens(['plans', 'list']);
  t.match(human.stdout, /^CODE +NAME +REQUESTS\/MONTH\n/);
  t.match(human.stdout, /\ngold +Gold +5000\n/);
});

t.test('accounts create with a plan starts an active subscription; subscriptions set and cancel', async (t) => {
  const account = await json(['accounts', 'create', '--name', 'Acme Water', '--plan', 'gold']);
  t.type(account.id, 'number', 'ids print as numbers');
  t.match(account, { name: 'Acme Water', subscription: { accountId: account.id, planCode: 'gold', state: 'active' } });
  const row = await db
    .selectFrom('subscriptions')
    .selectAll()
    .where('account_id', '=', account.id)
    .executeTakeFirstOrThrow();
  t.equal(row.status, 'active');
  t.ok(row.period_end.getTime() > Date.now());
  await db
    .insertInto('webhook_endpoints')
    .values({
      account_id: account.id,
      url: 'http://127.0.0.1:9/hook',
      secret: newWebhookSecret(),
      events: [...WEBHOOK_EVENTS],
      disabled_reason: null,
    })
    .execute();

  const expired = await json([
    'subscriptions',
    'set',
    '--account',
    String(account.id),
    '--plan',
    'pro',
    '--until',
    '2020-01-01',
  ]);
  t.match(expired, { planCode: 'pro', status: 'active', state: 'expired', periodEnd: '2020-01-01T00:00:00.000Z' });
  const expiredRow = await db
    .selectFrom('subscriptions')
    .selectAll()
    .where('account_id', '=', account.id)
    .executeTakeFirstOrThrow();
  t.ok(expiredRow.period_end.getTime() < Date.now() && expiredRow.period_start < expiredRow.period_end);

  t.match(await json(['subscriptions', 'set', '--account', String(account.id), '--plan', 'pro', '--months', '2']), {
    state: 'active',
  });
  t.match(await json(['subscriptions', 'cancel', '--account', String(account.id)]), {
    status: 'cancelled',
    state: 'cancelled',
  });
  const cancelledRow = await db
    .selectFrom('subscriptions')
    .select('status')
    .where('account_id', '=', account.id)
    .executeTakeFirstOrThrow();
  t.equal(cancelledRow.status, 'cancelled');
  const events = await db.selectFrom('webhook_deliveries').select(['event_type', 'payload']).orderBy('id').execute();
  t.same(
    events.map((event) => event.event_type),
    ['subscription.updated', 'subscription.renewed', 'subscription.cancelled'],
    'each change sent its event (the new account had no endpoint to hear of its creation)',
  );
  t.match(events[0].payload, {
    data: { account_id: account.id, plan: 'pro', status: 'expired', previous: { plan: 'gold', status: 'active' } },
  });

  const human = await meterlens(['accounts', 'create', '--name', 'Beta']);
  t.match(human, { code: 0, stdout: /^created account \d+ "Beta"\n$/ });
});

t.test('keys create, list, disable, enable, delete', async (t) => {
  const { id: accountId } = await json(['accounts', 'create', '--name', 'Keyholder', '--plan', 'trial']);
  const created = await json(['keys', 'create', '--account', String(accountId), '--project', 'Farm']);
  t.same(Object.keys(created).sort(), ['id', 'key']);
  t.type(created.id, 'number');
  t.match(created.key, API_KEY_PATTERN);
  const row = await db.selectFrom('api_keys').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
  t.equal(row.key_sha256, hashApiKey(created.key), 'the database holds the hash');
  t.notOk(JSON.stringify(row).includes(created.key.slice(-32)), 'and not the key');

  const inactive = await json(['keys', 'create', '--account', String(accountId), '--project', 'Spare', '--inactive']);
  const list = await meterlens(['keys', 'list', '--account', String(accountId), '--json']);
  t.notOk(
    list.stdout.includes(created.key) || list.stdout.includes(row.key_sha256),
    'listing shows neither key nor hash',
  );
  const { keys } = JSON.parse(list.stdout);
  t.match(keys, [
    {
      id: created.id,
      projectName: 'Farm',
      status: 'active',
      displayPrefix: created.key.slice(0, 19),
      displaySuffix: created.key.slice(-4),
    },
    { id: inactive.id, projectName: 'Spare', status: 'inactive' },
  ]);
  t.notOk('keySha256' in keys[0] || 'key' in keys[0]);
  const human = await meterlens(['keys', 'list', '--account', String(accountId)]);
  t.match(human.stdout, `${created.key.slice(0, 19)}…${created.key.slice(-4)}`);

  const status = async (id: number) =>
    await db
      .selectFrom('api_keys')
      .select(['status', 'deleted_at'])
      .where('id', '=', String(id))
      .executeTakeFirstOrThrow();
  t.match(await json(['keys', 'disable', String(created.id)]), { id: created.id, status: 'inactive' });
  t.equal((await status(created.id)).status, 'inactive');
  t.match(await json(['keys', 'enable', String(created.id)]), { status: 'active' });
  t.equal((await status(created.id)).status, 'active');
  t.same(await json(['keys', 'delete', String(created.id)]), { id: created.id, deleted: true });
  t.ok((await status(created.id)).deleted_at, 'soft-deleted');
  t.same(
    (await json(['keys', 'list', '--account', String(accountId)])).keys.map((key: { id: number }) => key.id),
    [inactive.id],
  );

  const again = await meterlens(['keys', 'delete', String(created.id)]);
  t.match(again, { code: 1, stdout: '', stderr: /no API key with id/ }, 'a missing key exits with 1');
});

t.test('webhooks add and list', async (t) => {
  const { id: accountId } = await json(['accounts', 'create', '--name', 'Hooked']);
  const env = { WEBHOOK_ALLOW_PRIVATE: '1' };
  const added = await json(
    [
      'webhooks',
      'add',
      '--account',
      String(accountId),
      '--url',
      'http://127.0.0.1:9/hook',
      '--events',
      'reading.failed',
    ],
    env,
  );
  t.type(added.id, 'number');
  t.match(added.secret, /^whsec_/);
  const { endpoints } = await json(['webhooks', 'list', '--account', String(accountId)]);
  t.match(endpoints, [{ id: added.id, url: 'http://127.0.0.1:9/hook', events: ['reading.failed'], enabled: true }]);
  t.notOk(JSON.stringify(endpoints).includes(added.secret), 'the secret is shown once only');

  const capped = await meterlens(
    ['webhooks', 'add', '--account', String(accountId), '--url', 'http://127.0.0.1:9/second'],
    {
      ...env,
      WEBHOOK_ENDPOINTS_PER_ACCOUNT: '1',
    },
  );
  t.match(
    capped,
    { code: 1, stderr: /This account already has 1 webhook endpoints, the most it may have \(1\)/ },
    'WEBHOOK_ENDPOINTS_PER_ACCOUNT',
  );
});

t.test(
  'webhooks disable and enable: an endpoint disabled after failing is enabled again, its run of failures forgotten',
  async (t) => {
    const { id: accountId } = await json(['accounts', 'create', '--name', 'Failing']);
    const { id } = await db
      .insertInto('webhook_endpoints')
      .values({
        account_id: accountId,
        url: 'http://127.0.0.1:9/hook',
        secret: newWebhookSecret(),
        disabled_reason: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    t.same(await json(['webhooks', 'disable', id]), { id: Number(id), enabled: false });
    t.match(await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow(), {
      enabled: false,
      disabled_reason: 'Disabled by the operator',
    });
    await db
      .updateTable('webhook_endpoints')
      .set({ failing_since: new Date(), disabled_reason: 'Every attempt since … failed' })
      .where('id', '=', id)
      .execute();
    const enabled = await meterlens(['webhooks', 'enable', id]);
    t.match(enabled, { code: 0, stdout: `webhook endpoint ${id} is now enabled\n` });
    t.match(await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow(), {
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      consecutive_failures: 0,
    });
    t.match(await meterlens(['webhooks', 'enable', '999999']), { code: 1, stderr: /Webhook endpoint not found/ });
  },
);

t.test('users create: a given password, or a generated one printed once; both sign in', async (t) => {
  const account = await json(['accounts', 'create', '--name', 'Closed Water', '--plan', 'starter']);
  const given = await json([
    'users',
    'create',
    '--account',
    String(account.id),
    '--email',
    'Op@Closed.example',
    '--password',
    'a long passphrase',
  ]);
  t.match(given, { id: Number, accountId: account.id, email: 'Op@Closed.example' });
  t.notOk('password' in given, 'a given password is not echoed');
  const generated = await meterlens([
    'users',
    'create',
    '--account',
    String(account.id),
    '--email',
    'second@closed.example',
  ]);
  t.equal(generated.code, 0);
  const password = generated.stdout.trimEnd().split('\n').at(-1)!;
  t.match(generated.stdout, /shown this once/);
  t.ok(password.length >= 16, 'a generated password');
  const hashes = await db
    .selectFrom('users')
    .select(['email', 'password_hash'])
    .where('account_id', '=', String(account.id))
    .orderBy('id')
    .execute();
  t.equal(await verifyPassword('a long passphrase', hashes[0].password_hash), true);
  t.equal(await verifyPassword(password, hashes[1].password_hash), true);

  const duplicate = await meterlens([
    'users',
    'create',
    '--account',
    String(account.id),
    '--email',
    'op@closed.EXAMPLE',
  ]);
  t.match(duplicate, { code: 2, stderr: /already exists/ }, 'emails are unique whatever their case');
  t.match(await meterlens(['users', 'create', '--account', '999999', '--email', 'x@y.example']), {
    code: 1,
    stderr: /no account with id 999999/,
  });
  t.match(
    await meterlens([
      'users',
      'create',
      '--account',
      String(account.id),
      '--email',
      'x@y.example',
      '--password',
      'short',
    ]),
    {
      code: 2,
      stderr: /at least 10 characters/,
    },
  );
});

t.test('bad arguments exit with 2 and a message on stderr', async (t) => {
  const cases = [
    ['bogus'],
    ['plans'],
    ['plans', 'create', '--code', 'x', '--name', 'X'],
    ['plans', 'create', '--code', 'x', '--name', 'X', '--limit', 'many'],
    ['plans', 'list', '--verbose'],
    ['accounts', 'create'],
    ['subscriptions', 'set', '--account', '1', '--plan', 'pro'],
    ['subscriptions', 'set', '--account', '1', '--plan', 'pro', '--months', '1', '--until', '2030-01-01'],
    ['subscriptions', 'set', '--account', '1', '--plan', 'pro', '--until', 'someday'],
    ['keys', 'create', '--account', 'abc', '--project', 'P'],
    ['keys', 'enable'],
    ['keys', 'delete', '1', '2'],
    ['read'],
  ];
  for (const args of cases) {
    const run = await meterlens([...args, '--json']);
    t.match(run, { code: 2, stdout: '', stderr: /^meterlens: \S/ }, args.join(' '));
  }
});

t.test('read --json prints one line per file, in order, without a database', async (t) => {
  const photo = (digits: string) =>
    sharp(
      Buffer.from(
        `<svg xmlns="http://www.w3.org/2000/svg" width="480" height="160"><rect width="480" height="160" fill="#eee"/>` +
          `<text x="30" y="110" font-family="monospace" font-size="96">${digits}</text></svg>`,
      ),
    );
  const first = path.join(scratch, 'first.png');
  const second = path.join(scratch, 'second.jpg');
  const notAnImage = path.join(scratch, 'notes.txt');
  await photo('00417').png().toFile(first);
  await photo('12345').jpeg().toFile(second);
  await writeFile(notAnImage, 'not a photo');

  const run = await meterlens(['read', first, notAnImage, second, '--json'], {
    DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
  });
  t.equal(run.code, 1, 'some file failed');
  const lines = run.stdout
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line));
  t.match(lines, [
    { file: first, error: { code: 'readers_unavailable', message: /No reader is configured/ } },
    { file: notAnImage, error: { code: 'invalid_image' } },
    { file: second, error: { code: 'readers_unavailable' } },
  ]);
  t.equal(lines.length, 3);
});
