/** The operator's lists and the commands of issue 46 that act on people and endpoints. */
import t from 'tap';
import { resetPassword } from '../../src/accounts/password-reset.ts';
import { verifyPassword } from '../../src/accounts/passwords.ts';
import { newWebhookSecret } from '../../src/webhooks/signature.ts';
import { startCli } from '../helpers/cli.ts';

const { db, meterlens, json } = await startCli(t);

t.test('accounts list, users list and subscriptions show, as text and --json', async (t) => {
  const account = await json(['accounts', 'create', '--name', 'Listed Water', '--plan', 'pro']);
  const bare = await json(['accounts', 'create', '--name', 'No Plan Yet']);
  await json([
    'users',
    'create',
    '--account',
    String(account.id),
    '--email',
    'first@listed.example',
    '--password',
    'a long passphrase',
  ]);
  await json([
    'users',
    'create',
    '--account',
    String(account.id),
    '--email',
    'second@listed.example',
    '--password',
    'a long passphrase',
  ]);

  const { accounts } = await json(['accounts', 'list']);
  t.match(
    accounts.find((listed: { id: number }) => listed.id === account.id),
    {
      id: account.id,
      name: 'Listed Water',
      users: 2,
      planCode: 'pro',
      state: 'active',
      periodEnd: String,
      trialPlanCode: null,
    },
  );
  t.match(
    accounts.find((listed: { id: number }) => listed.id === bare.id),
    { name: 'No Plan Yet', users: 0, planCode: null, state: null },
  );
  const human = await meterlens(['accounts', 'list']);
  t.match(human.stdout, /^ID +NAME +PLAN +SUBSCRIPTION +USERS +CREATED\n/);
  t.match(human.stdout, new RegExp(`\\n${account.id} +Listed Water +pro +active until \\S+ +2 `));
  t.match(human.stdout, new RegExp(`\\n${bare.id} +No Plan Yet +— +none +0 `));

  const { users } = await json(['users', 'list', '--account', String(account.id)]);
  t.match(users, [
    { id: Number, accountId: account.id, email: 'first@listed.example', role: 'owner', lastLoginAt: null },
    { accountId: account.id, email: 'second@listed.example', role: 'owner' },
  ]);
  t.equal(users.length, 2);
  t.notOk(JSON.stringify(users).includes('scrypt'), 'no password hashes');
  const everyone = await json(['users', 'list']);
  t.ok(everyone.users.length >= 2, 'without --account: every account');
  t.match(
    (await meterlens(['users', 'list', '--account', String(account.id)])).stdout,
    /^ID +ACCOUNT +EMAIL +ROLE +CREATED +LAST SIGN-IN\n.*first@listed\.example +owner +\S+ +never\n/,
  );
  t.match(await meterlens(['users', 'list', '--account', '999999']), { code: 1, stderr: /no account with id 999999/ });

  t.match(await json(['subscriptions', 'show', '--account', String(account.id)]), {
    accountId: account.id,
    planCode: 'pro',
    state: 'active',
  });
  t.match(
    (await meterlens(['subscriptions', 'show', '--account', String(account.id)])).stdout,
    new RegExp(`^account ${account.id}: plan pro, active until `),
  );
  t.match(await meterlens(['subscriptions', 'show', '--account', String(bare.id)]), {
    code: 1,
    stderr: `account ${bare.id} has no subscription`,
  });
});

t.test('users reset-link prints a one-time link that sets a new password and ends the sessions', async (t) => {
  const account = await json(['accounts', 'create', '--name', 'Forgetful Water', '--plan', 'starter']);
  const { id: userId } = await json([
    'users',
    'create',
    '--account',
    String(account.id),
    '--email',
    'Forgot@Forgetful.example',
    '--password',
    'a long passphrase',
  ]);
  await db
    .insertInto('sessions')
    .values({
      token_sha256: 'a'.repeat(64),
      user_id: String(userId),
      csrf_token: 'csrf',
      expires_at: new Date(Date.now() + 86_400_000),
    })
    .execute();
  const printed = await json(['users', 'reset-link', '--email', 'forgot@forgetful.example'], {
    PUBLIC_URL: 'https://meters.example.com',
  });
  t.equal(printed.email, 'Forgot@Forgetful.example');
  t.match(printed.link, /^https:\/\/meters\.example\.com\/dashboard\/reset-password\?token=[A-Za-z0-9_-]{43}$/);
  const token = new URL(printed.link).searchParams.get('token')!;
  await resetPassword(db, { token, password: 'the new passphrase', passwordConfirmation: 'the new passphrase' });
  const user = await db
    .selectFrom('users')
    .select('password_hash')
    .where('id', '=', String(userId))
    .executeTakeFirstOrThrow();
  t.equal(await verifyPassword('the new passphrase', user.password_hash), true, 'the link set the password');
  t.same(
    await db.selectFrom('sessions').select('id').where('user_id', '=', String(userId)).execute(),
    [],
    'and ended the sessions',
  );
  await t.rejects(resetPassword(db, { token, password: 'yet another one', passwordConfirmation: 'yet another one' }), {
    message: /already been used/,
  });

  const human = await meterlens(['users', 'reset-link', '--email', 'forgot@forgetful.example']);
  t.match(
    human,
    { code: 0, stdout: /works once, within 1 hour\):\nhttp:\/\/localhost:\d+\/dashboard\/reset-password\?token=/ },
    'PUBLIC_URL unset: localhost and PORT',
  );
  t.match(await meterlens(['users', 'reset-link', '--email', 'nobody@forgetful.example']), {
    code: 1,
    stderr: /no user with the email nobody@forgetful\.example/,
  });
});

t.test(
  'webhooks delete: the endpoint is gone, its pending deliveries end, and nothing more is sent to it',
  async (t) => {
    const { id: accountId } = await json(['accounts', 'create', '--name', 'Unhooked']);
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
    await db
      .insertInto('webhook_deliveries')
      .values({
        event_id: 'evt_pending',
        account_id: accountId,
        endpoint_id: id,
        event_type: 'reading.completed',
        payload: '{}',
      })
      .execute();
    t.same(await json(['webhooks', 'delete', id]), { id: Number(id), deleted: true });
    t.notOk(await db.selectFrom('webhook_endpoints').select('id').where('id', '=', id).executeTakeFirst());
    t.same(
      await db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', id).execute(),
      [],
      'no delivery is left for it',
    );
    t.same(
      await db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('event_id', '=', 'evt_pending')
        .where('status', '=', 'pending')
        .execute(),
      [],
      'none pending',
    );
    t.same((await json(['webhooks', 'list', '--account', String(accountId)])).endpoints, []);
    t.match(await meterlens(['webhooks', 'delete', id]), { code: 1, stderr: /Webhook endpoint not found/ });
    t.match(await meterlens(['webhooks', 'delete']), { code: 2 });
  },
);
