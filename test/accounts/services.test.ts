import t from 'tap';
import { createAccount } from '../../src/accounts/accounts.ts';
import { API_KEY_PATTERN, hashApiKey } from '../../src/accounts/api-key-format.ts';
import {
  API_KEYS_PER_ACCOUNT,
  createApiKey,
  deleteApiKey,
  listApiKeys,
  PROJECT_NAME_MAX_LENGTH,
  setApiKeyStatus,
} from '../../src/accounts/api-keys.ts';
import { createPlan, listPlans } from '../../src/accounts/plans.ts';
import { cancelSubscription, getSubscription, setSubscription } from '../../src/accounts/subscriptions.ts';
import { createDatabase } from '../../src/db/database.ts';
import { authenticate } from '../../src/pipeline/authenticate.ts';
import { checkSubscription } from '../../src/pipeline/check-subscription.ts';
import { createTestDatabase } from '../helpers/database.ts';

const invalid = { name: 'DomainError', kind: 'invalid' };
const notFound = { name: 'DomainError', kind: 'not_found' };
const keysFull = {
  name: 'DomainError',
  kind: 'refused',
  field: 'keys',
  message: `the account has ${API_KEYS_PER_ACCOUNT} API keys, the most it may have: delete one it no longer uses`,
};

const database = await createTestDatabase();
const db = createDatabase(database.url, 2);
t.teardown(async () => {
  await db.destroy();
  await database.drop();
});

const DAY_MS = 24 * 60 * 60 * 1000;

/** The plan the API's checks see for an account, through a key of its own. */
async function planSeenByApi(accountId: string) {
  const { key } = await createApiKey(db, { accountId, projectName: 'plan check' });
  return checkSubscription((await authenticate(db, `Bearer ${key}`)).subscription);
}

t.test('plans', async (t) => {
  const plan = await createPlan(db, { code: 'gold', name: 'Gold', monthlyRequestLimit: 5000 });
  t.match(plan, { code: 'gold', name: 'Gold', monthlyRequestLimit: 5000, createdAt: Date });
  t.same(
    (await listPlans(db)).map((listed) => listed.code),
    ['trial', 'starter', 'gold', 'pro', 'scale'],
    'smallest limit first',
  );

  await t.rejects(createPlan(db, { code: 'gold', name: 'Again', monthlyRequestLimit: 1 }), invalid, 'codes are unique');
  await t.rejects(createPlan(db, { code: 'Bad Code', name: 'X', monthlyRequestLimit: 1 }), invalid);
  await t.rejects(createPlan(db, { code: 'neg', name: 'X', monthlyRequestLimit: -1 }), invalid);
  await t.rejects(createPlan(db, { code: 'blank', name: '  ', monthlyRequestLimit: 1 }), invalid);
});

t.test('an account created with a plan has an active one-month subscription', async (t) => {
  const account = await createAccount(db, { name: 'Acme', planCode: 'starter' });
  t.match(account, {
    id: /^\d+$/,
    name: 'Acme',
    subscription: { planCode: 'starter', status: 'active', state: 'active' },
  });
  const subscription = await getSubscription(db, account.id);
  t.same(subscription, account.subscription);
  const days = (subscription!.periodEnd.getTime() - subscription!.periodStart.getTime()) / DAY_MS;
  t.ok(days >= 28 && days <= 31, `one calendar month (${days} days)`);
  t.same(await planSeenByApi(account.id), { planCode: 'starter', monthlyRequestLimit: 1000 }, 'the API accepts it');

  const bare = await createAccount(db, { name: 'No plan' });
  t.equal(bare.subscription, undefined);
  t.equal(await getSubscription(db, bare.id), undefined);
});

t.test('an unknown plan creates no account', async (t) => {
  const before = await db
    .selectFrom('accounts')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .executeTakeFirstOrThrow();
  await t.rejects(createAccount(db, { name: 'Ghost', planCode: 'nope' }), notFound);
  const after = await db
    .selectFrom('accounts')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .executeTakeFirstOrThrow();
  t.equal(after.count, before.count, 'the account insert was rolled back with the subscription');
  await t.rejects(createAccount(db, { name: ' ' }), invalid);
});

t.test('setSubscription and cancelSubscription', async (t) => {
  const { id } = await createAccount(db, { name: 'Subscriber' });

  const monthly = await setSubscription(db, { accountId: id, planCode: 'pro', months: 3 });
  t.match(monthly, { accountId: id, planCode: 'pro', status: 'active', state: 'active' });
  const days = (monthly.periodEnd.getTime() - monthly.periodStart.getTime()) / DAY_MS;
  t.ok(days >= 89 && days <= 92, `three months (${days} days)`);

  const until = new Date(Date.now() + 10 * DAY_MS);
  const dated = await setSubscription(db, { accountId: id, planCode: 'scale', until });
  t.match(dated, { planCode: 'scale', state: 'active' }, 'replaces the subscription in place');
  t.equal(dated.periodEnd.getTime(), until.getTime());
  t.ok(Math.abs(dated.periodStart.getTime() - Date.now()) < 60_000, 'a future period starts now');

  const expired = await setSubscription(db, {
    accountId: id,
    planCode: 'trial',
    until: new Date('2020-01-01T00:00:00Z'),
  });
  t.match(expired, { status: 'active', state: 'expired' });
  t.ok(expired.periodStart < expired.periodEnd, 'a past period still starts before it ends');
  await t.rejects(planSeenByApi(id), { message: /expired/ }, 'the API refuses it');
  const rows = await db.selectFrom('subscriptions').selectAll().where('account_id', '=', id).execute();
  t.equal(rows.length, 1, 'one subscription per account');

  await setSubscription(db, { accountId: id, planCode: 'pro' });
  const cancelled = await cancelSubscription(db, id);
  t.match(cancelled, { planCode: 'pro', status: 'cancelled', state: 'cancelled' });
  t.same(await getSubscription(db, id), cancelled);

  await t.rejects(setSubscription(db, { accountId: id, planCode: 'pro', months: 1, until }), invalid);
  await t.rejects(setSubscription(db, { accountId: id, planCode: 'pro', months: 0 }), invalid);
  await t.rejects(setSubscription(db, { accountId: id, planCode: 'pro', until: new Date('nonsense') }), invalid);
  await t.rejects(setSubscription(db, { accountId: id, planCode: 'nope' }), notFound);
  await t.rejects(setSubscription(db, { accountId: '999999', planCode: 'pro' }), notFound);
  await t.rejects(setSubscription(db, { accountId: 'abc', planCode: 'pro' }), invalid);
  const { id: unsubscribed } = await createAccount(db, { name: 'Never subscribed' });
  await t.rejects(cancelSubscription(db, unsubscribed), notFound);
});

t.test('API keys are stored as hashes and shown by prefix and suffix', async (t) => {
  const { id: accountId } = await createAccount(db, { name: 'Keys', planCode: 'trial' });
  const created = await createApiKey(db, { accountId, projectName: 'Farm' });
  t.match(created.key, API_KEY_PATTERN);

  const row = await db.selectFrom('api_keys').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
  t.equal(row.key_sha256, hashApiKey(created.key));
  t.notOk(
    JSON.stringify(row).includes(created.key.slice('meterlens_live_'.length)),
    'the key itself is stored nowhere',
  );
  t.match(await authenticate(db, `Bearer ${created.key}`), {
    keyId: created.id,
    accountId,
    subscription: { planCode: 'trial' },
    monthlyUsage: 0,
  });

  const listed = await listApiKeys(db, accountId);
  t.same(listed, [
    {
      id: created.id,
      accountId,
      projectName: 'Farm',
      status: 'active',
      displayPrefix: created.key.slice(0, 'meterlens_live_'.length + 4),
      displaySuffix: created.key.slice(-4),
      createdAt: row.created_at,
      lastUsedAt: null,
    },
  ]);

  const inactive = await createApiKey(db, { accountId, projectName: 'Later', status: 'inactive' });
  await t.rejects(
    authenticate(db, `Bearer ${inactive.key}`),
    { message: 'Invalid or inactive API key' },
    'an inactive key does not authenticate',
  );
  t.match(await setApiKeyStatus(db, accountId, inactive.id, 'active'), { id: inactive.id, status: 'active' });
  await authenticate(db, `Bearer ${inactive.key}`);
  t.match(
    await setApiKeyStatus(db, undefined, inactive.id, 'inactive'),
    { status: 'inactive' },
    'the operator needs no account',
  );

  const other = await createAccount(db, { name: 'Other' });
  await t.rejects(
    setApiKeyStatus(db, other.id, created.id, 'inactive'),
    notFound,
    "another account's key is not found",
  );
  await t.rejects(deleteApiKey(db, other.id, created.id), notFound);
  await t.rejects(setApiKeyStatus(db, accountId, created.id, 'paused' as 'active'), invalid);

  await deleteApiKey(db, accountId, created.id);
  t.same(
    (await listApiKeys(db, accountId)).map((key) => key.id),
    [inactive.id],
    'deleted keys are not listed',
  );
  await t.rejects(
    authenticate(db, `Bearer ${created.key}`),
    { message: 'Invalid or inactive API key' },
    'a deleted key does not authenticate',
  );
  await t.rejects(deleteApiKey(db, undefined, created.id), notFound, 'a key is deleted once');
  await t.rejects(setApiKeyStatus(db, undefined, created.id, 'active'), notFound, 'a deleted key cannot be revived');

  await t.rejects(createApiKey(db, { accountId: '999999', projectName: 'X' }), notFound);
  await t.rejects(createApiKey(db, { accountId, projectName: '' }), invalid);
});

t.test(
  'an account has at most API_KEYS_PER_ACCOUNT keys, exactly under a parallel burst; project names are bounded',
  async (t) => {
    const { id: accountId } = await createAccount(db, { name: 'Many keys' });
    // A pool of its own, so that the creations really run side by side.
    const burstDb = createDatabase(database.url, 10);
    t.teardown(() => burstDb.destroy());
    const burst = await Promise.allSettled(
      Array.from({ length: API_KEYS_PER_ACCOUNT + 5 }, (_, i) =>
        createApiKey(burstDb, { accountId, projectName: `site ${i}`, status: i % 2 ? 'inactive' : 'active' }),
      ),
    );
    const created = burst.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    t.equal(created.length, API_KEYS_PER_ACCOUNT, 'inactive keys count too: they can be enabled again');
    for (const result of burst.filter((result) => result.status === 'rejected')) t.match(result.reason, keysFull);
    t.equal((await listApiKeys(db, accountId)).length, API_KEYS_PER_ACCOUNT);

    await t.rejects(createApiKey(db, { accountId, projectName: 'one more' }), keysFull);
    await deleteApiKey(db, accountId, created[0]!.id);
    await createApiKey(db, { accountId, projectName: 'replacement' });
    await t.rejects(
      createApiKey(db, { accountId, projectName: 'one more' }),
      keysFull,
      'a deleted key frees its place, once',
    );
    const { id: other } = await createAccount(db, { name: 'Other keys' });
    await createApiKey(db, { accountId: other, projectName: 'own bound' });

    const longest = 'p'.repeat(PROJECT_NAME_MAX_LENGTH);
    t.match(await createApiKey(db, { accountId: other, projectName: ` ${longest} ` }), { id: String });
    await t.rejects(createApiKey(db, { accountId: other, projectName: `${longest}p` }), {
      ...invalid,
      field: 'project name',
      message: `project name must be at most ${PROJECT_NAME_MAX_LENGTH} characters`,
    });
  },
);
