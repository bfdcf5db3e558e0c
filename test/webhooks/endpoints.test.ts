import t from 'tap';
import { loadConfig } from '../../src/config.ts';
import { createDatabase } from '../../src/db/database.ts';
import {
  addWebhookEndpoint,
  deleteWebhookEndpoint,
  listWebhookEndpoints,
  rotateWebhookSecret,
  setWebhookEndpointEnabled,
  updateWebhookEndpoint,
} from '../../src/webhooks/endpoints.ts';
import { DEFAULT_WEBHOOK_EVENTS } from '../../src/webhooks/events.ts';
import { createTestDatabase } from '../helpers/database.ts';

const database = await createTestDatabase();
t.teardown(database.drop);
const db = createDatabase(database.url);
t.teardown(() => db.destroy());
const config = loadConfig({});
const newAccount = async (name: string) =>
  (await db.insertInto('accounts').values({ name }).returning('id').executeTakeFirstOrThrow()).id;
const accountId = await newAccount('Waterworks');
const otherAccountId = await newAccount('Other');

t.test('endpoints on private addresses are refused unless WEBHOOK_ALLOW_PRIVATE=1', async (t) => {
  for (const url of [
    'http://127.0.0.1/hook',
    'http://10.0.0.5/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/hook',
    'http://localhost:8080/hook',
    'http://[fc00::1]/hook',
    'http://[::ffff:10.0.0.5]/hook',
  ]) {
    await t.rejects(
      addWebhookEndpoint(db, config, { accountId, url }),
      { name: 'DomainError', kind: 'invalid', message: /non-public address/ },
      url,
    );
  }
  const allowed = await addWebhookEndpoint(db, loadConfig({ WEBHOOK_ALLOW_PRIVATE: '1' }), {
    accountId: otherAccountId,
    url: 'http://127.0.0.1:9/hook',
  });
  t.match(allowed, { id: /^\d+$/, secret: /^whsec_/ });
});

t.test('only http and https URLs without credentials, and known events', async (t) => {
  const invalid = (input: { url: string; events?: string[] }, message: RegExp) =>
    t.rejects(addWebhookEndpoint(db, config, { accountId, ...input } as Parameters<typeof addWebhookEndpoint>[2]), {
      kind: 'invalid',
      message,
    });
  await invalid({ url: 'ftp://8.8.8.8/hook' }, /http:\/\/ or https:\/\//);
  await invalid({ url: 'file:///etc/passwd' }, /http:\/\/ or https:\/\//);
  await invalid({ url: 'not a url' }, /not valid/);
  await invalid({ url: 'https://user:pass@8.8.8.8/hook' }, /user name or password/);
  await invalid({ url: 'https://8.8.8.8/hook', events: [] }, /at least one event/);
  await invalid(
    { url: 'https://8.8.8.8/hook', events: ['reading.completed', 'meter.exploded'] },
    /Unknown events: meter.exploded/,
  );
});

t.test('an endpoint is added, listed without its secret, disabled, enabled and given a new secret', async (t) => {
  const added = await addWebhookEndpoint(db, config, {
    accountId,
    url: 'https://8.8.8.8/hook',
    events: ['reading.failed', 'reading.failed'],
  });
  t.match(added.secret, /^whsec_/);
  const defaults = await addWebhookEndpoint(db, config, { accountId, url: 'https://1.1.1.1/hook' });

  const listed = await listWebhookEndpoints(db, accountId);
  t.same(
    listed.map(({ id, url, events, enabled }) => ({ id, url, events, enabled })),
    [
      { id: added.id, url: 'https://8.8.8.8/hook', events: ['reading.failed'], enabled: true },
      { id: defaults.id, url: 'https://1.1.1.1/hook', events: ['reading.completed', 'reading.failed'], enabled: true },
    ],
  );
  t.notOk(
    listed.some((endpoint) => 'secret' in endpoint),
    'the secret is shown only when created or rotated',
  );

  await setWebhookEndpointEnabled(db, accountId, added.id, false);
  t.match((await listWebhookEndpoints(db, accountId))[0], {
    enabled: false,
    disabled_reason: 'Disabled by the account',
  });
  await setWebhookEndpointEnabled(db, accountId, added.id, true);
  t.match((await listWebhookEndpoints(db, accountId))[0], { enabled: true, disabled_reason: null });

  const rotated = await rotateWebhookSecret(db, accountId, added.id);
  t.match(rotated.secret, /^whsec_/);
  t.not(rotated.secret, added.secret);
  const stored = await db
    .selectFrom('webhook_endpoints')
    .select('secret')
    .where('id', '=', added.id)
    .executeTakeFirstOrThrow();
  t.equal(stored.secret, rotated.secret);
});

t.test("another account's endpoint, or an id that is no id, is not found", async (t) => {
  const { id } = await addWebhookEndpoint(db, config, { accountId, url: 'https://8.8.4.4/hook' });
  const notFound = { name: 'DomainError', kind: 'not_found' };
  await t.rejects(setWebhookEndpointEnabled(db, otherAccountId, id, false), notFound);
  await t.rejects(rotateWebhookSecret(db, otherAccountId, id), notFound);
  await t.rejects(rotateWebhookSecret(db, accountId, 'abc'), notFound);
  await t.rejects(setWebhookEndpointEnabled(db, accountId, '99999999999999999999999', false), notFound);
  t.notOk((await listWebhookEndpoints(db, otherAccountId)).some((endpoint) => endpoint.id === id));
});

t.test(
  "the events column's default in sql/ is DEFAULT_WEBHOOK_EVENTS, for rows written without the domain code",
  async (t) => {
    const row = await db
      .insertInto('webhook_endpoints')
      .values({ account_id: otherAccountId, url: 'https://8.8.8.8/sql-default', secret: 'whsec_sql' })
      .returning(['id', 'events'])
      .executeTakeFirstOrThrow();
    t.teardown(() => db.deleteFrom('webhook_endpoints').where('id', '=', row.id).execute());
    t.same(row.events, DEFAULT_WEBHOOK_EVENTS);
  },
);

t.test('an edit changes the URL and the events, checked as on add, the address guard included', async (t) => {
  const { id } = await addWebhookEndpoint(db, config, {
    accountId,
    url: 'https://8.8.8.8/before',
    events: ['reading.completed'],
  });
  await db
    .updateTable('webhook_endpoints')
    .set({ failing_since: new Date(), consecutive_failures: 7 })
    .where('id', '=', id)
    .execute();
  const stored = () => db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  await updateWebhookEndpoint(db, config, {
    accountId,
    id,
    url: 'https://8.8.8.8/before',
    events: ['reading.completed', 'usage.limit_reached'],
  });
  t.match(
    await stored(),
    { events: ['reading.completed', 'usage.limit_reached'], consecutive_failures: 7 },
    'the same URL keeps the run of failures',
  );

  await updateWebhookEndpoint(db, config, {
    accountId,
    id,
    url: 'HTTPS://8.8.8.8:443/after',
    events: ['reading.failed'],
  });
  t.match(
    await stored(),
    { url: 'https://8.8.8.8/after', events: ['reading.failed'], failing_since: null, consecutive_failures: 0 },
    'a new URL is a new receiver',
  );

  for (const url of [
    'http://127.0.0.1/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/hook',
    'http://localhost:8080/hook',
  ]) {
    await t.rejects(
      updateWebhookEndpoint(db, config, { accountId, id, url, events: ['reading.failed'] }),
      { name: 'DomainError', kind: 'invalid', field: 'url', message: /non-public address/ },
      url,
    );
  }
  await t.rejects(
    updateWebhookEndpoint(db, config, { accountId, id, url: 'ftp://8.8.8.8/hook', events: ['reading.failed'] }),
    {
      kind: 'invalid',
      message: /http:\/\/ or https:\/\//,
    },
  );
  await t.rejects(updateWebhookEndpoint(db, config, { accountId, id, url: 'https://8.8.8.8/after', events: [] }), {
    kind: 'invalid',
    field: 'events',
    message: /at least one event/,
  });
  t.match(
    await stored(),
    { url: 'https://8.8.8.8/after', events: ['reading.failed'] },
    'a refused edit changes nothing',
  );

  const notFound = { name: 'DomainError', kind: 'not_found' };
  await t.rejects(
    updateWebhookEndpoint(db, config, {
      accountId: otherAccountId,
      id,
      url: 'https://8.8.8.8/taken',
      events: ['reading.failed'],
    }),
    notFound,
  );
  await t.rejects(
    updateWebhookEndpoint(db, config, { accountId, id: 'abc', url: 'https://8.8.8.8/x', events: ['reading.failed'] }),
    notFound,
  );
});

t.test('a second endpoint with the same URL on one account is refused, on add and on edit', async (t) => {
  const account = await newAccount('Duplicates');
  const first = await addWebhookEndpoint(db, config, { accountId: account, url: 'https://8.8.8.8/dup?tenant=1' });
  const duplicate = {
    name: 'DomainError',
    kind: 'conflict',
    field: 'url',
    message: `Endpoint ${first.id} already has this URL`,
  };
  for (const url of [
    'https://8.8.8.8/dup?tenant=1',
    'HTTPS://8.8.8.8:443/dup/?tenant=1',
    'https://8.8.8.8/dup?tenant=1#anchor',
  ]) {
    await t.rejects(addWebhookEndpoint(db, config, { accountId: account, url }), duplicate, url);
  }
  const second = await addWebhookEndpoint(db, config, { accountId: account, url: 'https://8.8.8.8/dup?tenant=2' });
  t.ok(second.id, 'another query is another receiver');
  await t.rejects(
    updateWebhookEndpoint(db, config, {
      accountId: account,
      id: second.id,
      url: 'https://8.8.8.8/dup/?tenant=1',
      events: ['reading.completed'],
    }),
    duplicate,
  );
  t.ok(
    await addWebhookEndpoint(db, config, { accountId: otherAccountId, url: 'https://8.8.8.8/dup?tenant=1' }),
    'another account may use the URL',
  );
  t.equal((await listWebhookEndpoints(db, account)).length, 2);
});

t.test('delete removes the endpoint, for its account or the operator; another account gets not found', async (t) => {
  const account = await newAccount('Deleting');
  const { id } = await addWebhookEndpoint(db, config, { accountId: account, url: 'https://8.8.8.8/deleted' });
  await t.rejects(deleteWebhookEndpoint(db, otherAccountId, id), { name: 'DomainError', kind: 'not_found' });
  await t.rejects(deleteWebhookEndpoint(db, account, 'abc'), { name: 'DomainError', kind: 'not_found' });
  t.same(await deleteWebhookEndpoint(db, account, id), { url: 'https://8.8.8.8/deleted', endedDeliveries: 0 });
  t.same(await listWebhookEndpoints(db, account), []);
  await t.rejects(deleteWebhookEndpoint(db, account, id), { name: 'DomainError', kind: 'not_found' }, 'deleted once');
  const readded = await addWebhookEndpoint(db, config, { accountId: account, url: 'https://8.8.8.8/deleted' });
  t.ok(readded.id, 'its URL may be added again');
  await deleteWebhookEndpoint(db, undefined, readded.id);
  t.same(await listWebhookEndpoints(db, account), [], 'the operator deletes without an account');
});
