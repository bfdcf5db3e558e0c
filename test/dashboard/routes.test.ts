import { sql } from 'kysely';
import t from 'tap';
import {
  API_KEYS_PER_ACCOUNT,
  createApiKey,
  listApiKeys,
  PROJECT_NAME_MAX_LENGTH,
} from '../../src/accounts/api-keys.ts';
import { MAX_FAILED_LOGINS_PER_EMAIL } from '../../src/accounts/sign-in.ts';
import { setSubscription } from '../../src/accounts/subscriptions.ts';
import { buildApp } from '../../src/app.ts';
import { purgeOldData } from '../../src/retention.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { startWebhookReceiver } from '../fakes/webhook-receiver.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import { startTestService, submitPhoto, waitFor, waitForMeter, type TestService } from '../helpers/service.ts';

const PASSWORD = 'correct horse battery';
let emailCounter = 0;
const newEmail = () => `user${++emailCounter}.${process.pid}@example.com`;

/** A freshly signed-up account's client and its account id. */
async function signedUp(service: TestService): Promise<{ client: DashboardClient; accountId: string; email: string }> {
  const client = new DashboardClient(service.url);
  const email = newEmail();
  const response = await client.signUp(email, PASSWORD);
  if (response.status !== 303) throw new Error(`sign-up answered ${response.status}: ${response.text}`);
  await client.get('/dashboard/keys');
  const user = await service.db
    .selectFrom('users')
    .select('account_id')
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  return { client, accountId: user.account_id, email };
}

async function createKey(client: DashboardClient, projectName: string, status = 'active') {
  const response = await client.post('/dashboard/keys', { project_name: projectName, status });
  const key = /<code id="secret-value" class="secret">(meterlens_live_[0-9a-f]{32})<\/code>/.exec(response.text)?.[1];
  return { response, key };
}

t.test('dashboard routes', async (t) => {
  const service = await startTestService(t);
  const photo = await renderMeterPhoto();

  t.test('GET / leads to the dashboard, which asks to sign in; the API keeps its JSON errors', async (t) => {
    const client = new DashboardClient(service.url);
    t.equal((await client.get('/')).location, '/dashboard');
    for (const path of [
      '/dashboard',
      '/dashboard/keys',
      '/dashboard/webhooks',
      '/dashboard/usage',
      '/dashboard/readings',
      '/dashboard/meters',
    ]) {
      const response = await client.get(path);
      t.equal(response.status, 303, path);
      t.equal(response.location, '/dashboard/login', path);
    }
    const api404 = await client.get('/api/nothing');
    t.equal(api404.status, 404);
    t.same(JSON.parse(api404.text), { errors: { route: ['Not found: GET /api/nothing'] } });
    const page404 = await client.get('/dashboard/nothing');
    t.equal(page404.status, 404);
    t.match(page404.headers.get('content-type'), /text\/html/);
    t.equal((await client.get('/dashboard/assets/dashboard.css')).status, 200);
  });

  t.test(
    'sign-up: CSRF checked, session cookie set, trial plan for one month, password hashed with scrypt',
    async (t) => {
      const client = new DashboardClient(service.url);
      const form = await client.get('/dashboard/signup');
      t.equal(form.status, 200);
      t.match(form.text, /<label for="email">Email<\/label>/);
      const email = newEmail();
      const noToken = await client.post('/dashboard/signup', {
        _csrf: '',
        organisation: 'Acme',
        email,
        password: PASSWORD,
      });
      t.equal(noToken.status, 403, 'no CSRF token');
      const wrongToken = await client.post('/dashboard/signup', {
        _csrf: `${client.csrfToken.slice(0, -1)}x`,
        organisation: 'Acme',
        email,
        password: PASSWORD,
      });
      t.equal(wrongToken.status, 403, 'wrong CSRF token');
      t.notOk(
        await service.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst(),
        'no user created',
      );

      const short = await client.post('/dashboard/signup', { organisation: 'Acme', email, password: 'short' });
      t.equal(short.status, 400);
      t.match(short.text, 'The password must have at least 10 characters');

      const created = await client.post('/dashboard/signup', {
        organisation: 'Acme <Water>',
        email,
        password: PASSWORD,
      });
      t.equal(created.status, 303);
      t.equal(created.location, '/dashboard/keys');
      const session = created.setCookies.find((cookie) => cookie.startsWith('meterlens_session='));
      t.match(session, /HttpOnly/);
      t.match(session, /SameSite=Lax/);
      t.notMatch(session, /Secure/, 'not Secure over plain http');

      const user = await service.db
        .selectFrom('users as u')
        .innerJoin('subscriptions as s', 's.account_id', 'u.account_id')
        .select([
          'u.password_hash',
          's.plan_code',
          's.status',
          sql<number>`extract(epoch FROM s.period_end - s.period_start)::int`.as('seconds'),
        ])
        .where('u.email', '=', email)
        .executeTakeFirstOrThrow();
      t.match(user.password_hash, /^scrypt\$15\$8\$1\$/);
      t.notMatch(user.password_hash, PASSWORD);
      t.equal(user.plan_code, 'trial');
      t.equal(user.status, 'active');
      t.ok(user.seconds >= 28 * 86400 && user.seconds <= 31 * 86400, 'one month');
      const keys = await client.get('/dashboard/keys');
      t.equal(keys.status, 200);
      t.match(keys.text, 'Acme &lt;Water&gt;', 'the organisation is shown escaped');

      const again = new DashboardClient(service.url);
      const duplicate = await again.signUp(email.toUpperCase(), PASSWORD);
      t.equal(duplicate.status, 400, 'emails are unique whatever their case');
      t.match(duplicate.text, 'already exists');
    },
  );

  t.test('the session cookie is Secure when the request came over https', async (t) => {
    const client = new DashboardClient(service.url);
    await client.get('/dashboard/signup');
    const response = await client.post(
      '/dashboard/signup',
      { organisation: 'Acme', email: newEmail(), password: PASSWORD },
      { 'x-forwarded-proto': 'https' },
    );
    t.match(
      response.setCookies.find((cookie) => cookie.startsWith('meterlens_session=')),
      /; Secure/,
    );
  });

  t.test('sign-in, sign-out, and failed sign-ins limited per email and per address', async (t) => {
    const { email } = await signedUp(service);
    const client = new DashboardClient(service.url);
    const wrong = await client.signIn(email, 'not the password');
    t.equal(wrong.status, 401);
    t.match(wrong.text, 'The email or the password is wrong.');
    const right = await client.signIn(email.toUpperCase(), PASSWORD);
    t.equal(right.status, 303, 'emails match whatever their case');
    t.equal((await client.get('/dashboard/usage')).status, 200);

    const logoutWithoutToken = await client.post('/dashboard/logout', { _csrf: 'nope' });
    t.equal(logoutWithoutToken.status, 403, 'sign-out needs the CSRF token too');
    const out = await client.post('/dashboard/logout');
    t.equal(out.location, '/dashboard/login');
    t.equal((await client.get('/dashboard/usage')).status, 303, 'signed out');

    const attacker = new DashboardClient(service.url);
    for (let attempt = 0; attempt < MAX_FAILED_LOGINS_PER_EMAIL; attempt++) {
      t.equal((await attacker.signIn(email, `guess ${attempt}`)).status, 401);
    }
    const throttled = await attacker.signIn(email, PASSWORD);
    t.equal(throttled.status, 429, 'even the right password is refused while throttled');
    t.match(throttled.text, 'Too many failed sign-ins');
    const rows = await service.db
      .selectFrom('login_attempts')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('email', '=', email.toLowerCase())
      .executeTakeFirstOrThrow();
    t.equal(rows.n, MAX_FAILED_LOGINS_PER_EMAIL, 'counted in Postgres, shared by every web process');

    const elsewhere = new DashboardClient(service.url);
    t.equal((await elsewhere.signIn(email, PASSWORD)).status, 429, 'the email is throttled from every browser');
    await service.db.deleteFrom('login_attempts').execute();
    // Per address: many emails from one (forwarded) address.
    const sprayer = new DashboardClient(service.url);
    await sprayer.get('/dashboard/login');
    const from = { 'x-forwarded-for': '203.0.113.9' };
    await service.db
      .insertInto('login_attempts')
      .values(Array.from({ length: 30 }, (_, index) => ({ email: `spray${index}@example.com`, ip: '203.0.113.9' })))
      .execute();
    const sprayed = await sprayer.post('/dashboard/login', { email, password: PASSWORD }, from);
    t.equal(sprayed.status, 429, 'too many failures from one address');
    const otherAddress = await sprayer.post(
      '/dashboard/login',
      { email, password: PASSWORD },
      { 'x-forwarded-for': '203.0.113.10' },
    );
    t.equal(otherAddress.status, 303, 'another address signs in');
  });

  t.test('SIGNUP=closed: no sign-up page; the operator creates users', async (t) => {
    const closed = await startTestService(t, { env: { SIGNUP: 'closed' }, worker: false });
    const client = new DashboardClient(closed.url);
    const login = await client.get('/dashboard/login');
    t.notMatch(login.text, '/dashboard/signup');
    t.equal((await client.get('/dashboard/signup')).status, 404);
    t.equal(
      (await client.post('/dashboard/signup', { organisation: 'x', email: newEmail(), password: PASSWORD })).status,
      404,
    );
  });

  t.test('a DEFAULT_PLAN that is not a plan stops the start, unless sign-up is closed', async (t) => {
    const { db, photos, boss, readers } = service;
    const config = { ...service.config, defaultPlan: 'gold' };
    await t.rejects(
      buildApp({ config, db, photos, boss, readers }, { logger: false }),
      /DEFAULT_PLAN "gold" is not a plan/,
    );
    const closed = await buildApp(
      { config: { ...config, signup: 'closed' }, db, photos, boss, readers },
      { logger: false },
    );
    await closed.close();
  });

  t.test('API keys: create shows the key once; enable, disable and delete act on the API at once', async (t) => {
    const { client } = await signedUp(service);
    const empty = await createKey(client, '   ');
    t.equal(empty.response.status, 400);
    t.match(empty.response.text, 'Project name must not be empty');

    const { response, key } = await createKey(client, 'field <app>');
    t.equal(response.status, 200);
    t.ok(key, 'the full key is in the response');
    t.match(response.text, 'It will not be shown again');
    t.match(response.text, 'field &lt;app&gt;', 'escaped');
    t.notMatch(response.text, '<app>');
    const list = await client.get('/dashboard/keys');
    t.notMatch(list.text, key!, 'never shown again');
    t.match(list.text, key!.slice(0, 19), 'the display prefix is');
    t.match(list.text, 'never', 'not used yet');
    const keyId = /action="\/dashboard\/keys\/(\d+)\/disable"/.exec(list.text)![1];

    t.equal((await submitPhoto(service, { key, image: photo, sync: true })).status, 200);
    t.match((await client.get('/dashboard/keys')).text, /Last used"[^<]*\d{4}-\d\d-\d\d/, 'last used shown');

    t.equal((await client.post(`/dashboard/keys/${keyId}/disable`, { _csrf: 'forged' })).status, 403, 'CSRF checked');
    t.equal((await submitPhoto(service, { key, image: photo, sync: true })).status, 200, 'still active');
    t.equal((await client.post(`/dashboard/keys/${keyId}/disable`)).location, '/dashboard/keys');
    t.equal(
      (await submitPhoto(service, { key, image: photo, sync: true })).status,
      422,
      'inactive key refused at once',
    );
    t.match((await client.get('/dashboard/keys')).text, 'badge-inactive');
    await client.post(`/dashboard/keys/${keyId}/enable`);
    t.equal((await submitPhoto(service, { key, image: photo, sync: true })).status, 200, 'enabled again');
    await client.post(`/dashboard/keys/${keyId}/delete`);
    t.equal((await submitPhoto(service, { key, image: photo, sync: true })).status, 422, 'deleted key refused at once');
    t.notMatch((await client.get('/dashboard/keys')).text, 'field &lt;app&gt;', 'and no longer listed');

    const inactive = await createKey(client, 'spare', 'inactive');
    t.equal(
      (await submitPhoto(service, { key: inactive.key, image: photo, sync: true })).status,
      422,
      'created inactive',
    );

    const unoffered = await client.post('/dashboard/keys', { project_name: 'spare', status: 'paused' });
    t.equal(unoffered.status, 400, 'a status the form does not offer is refused');
    t.match(unoffered.text, 'status field is not what this page sends');
    t.equal(
      (await client.post('/dashboard/keys', { _csrf: 'forged', status: 'paused' })).status,
      403,
      'a forged form is refused as forged, before its fields',
    );
  });

  t.test(
    'API keys: a project name too long, or keys at their bound, come back on the form with the message',
    async (t) => {
      const { client, accountId } = await signedUp(service);
      const tooLong = await createKey(client, 'n'.repeat(PROJECT_NAME_MAX_LENGTH + 1));
      t.equal(tooLong.response.status, 400);
      t.match(tooLong.response.text, `Project name must be at most ${PROJECT_NAME_MAX_LENGTH} characters`);
      t.match(tooLong.response.text, `maxlength="${PROJECT_NAME_MAX_LENGTH}"`, 'the field says so too');
      for (let i = (await listApiKeys(service.db, accountId)).length; i < API_KEYS_PER_ACCOUNT; i++)
        await createApiKey(service.db, { accountId, projectName: `site ${i}` });
      const full = await createKey(client, 'one more');
      t.equal(full.response.status, 403);
      t.notOk(full.key, 'no key created');
      t.match(
        full.response.text,
        `The account has ${API_KEYS_PER_ACCOUNT} API keys, the most it may have: delete one it no longer uses`,
      );
      t.match(full.response.text, 'value="one more"', 'the name is kept');
      t.equal((await listApiKeys(service.db, accountId)).length, API_KEYS_PER_ACCOUNT);
    },
  );

  t.test('webhooks: add, show and rotate the secret, disable, test event, deliveries, redeliver', async (t) => {
    const { client } = await signedUp(service);
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());

    const invalid = await client.post('/dashboard/webhooks', {
      url: 'ftp://example.com',
      events: ['reading.completed'],
    });
    t.equal(invalid.status, 400);
    t.match(invalid.text, 'The URL must start with http:// or https://');
    const noEvents = await client.post('/dashboard/webhooks', { url: `${receiver.url}/hook` });
    t.equal(noEvents.status, 400);
    t.match(noEvents.text, 'Choose at least one event');

    const added = await client.post('/dashboard/webhooks', {
      url: `${receiver.url}/hook`,
      events: ['reading.completed'],
    });
    t.equal(added.status, 200);
    const secret = /(whsec_[A-Za-z0-9+/=]+)/.exec(added.text)?.[1];
    t.ok(secret, 'the secret is shown on creation');
    const endpoint = await service.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('secret', '=', secret!)
      .executeTakeFirstOrThrow();
    t.same(endpoint.events, ['reading.completed']);
    const page = `/dashboard/webhooks/${endpoint.id}`;
    t.notMatch((await client.get(page)).text, secret!, 'not shown on a plain visit');
    t.match((await client.get('/dashboard/webhooks')).text, `${receiver.url}/hook`);
    t.match((await client.post(`${page}/secret`)).text, secret!, 'shown on request');
    const rotated = await client.post(`${page}/rotate-secret`);
    const newSecret = /(whsec_[A-Za-z0-9+/=]+)/.exec(rotated.text)?.[1];
    t.ok(newSecret && newSecret !== secret, 'a new secret');
    t.match(rotated.text, 'The old secret no longer verifies');

    t.equal((await client.post(`${page}/disable`)).location, page);
    t.match((await client.get(page)).text, 'Disabled by the account');
    const refused = await client.post(`${page}/test`);
    t.equal(refused.status, 400, 'a disabled endpoint gets no test event');
    t.match(refused.text, 'The endpoint is disabled');
    await client.post(`${page}/enable`);

    t.equal((await client.post(`${page}/test`)).location, page);
    await receiver.waitFor(1);
    const delivered = await waitFor(
      () => client.get(page),
      (response) => response.text.includes('badge-delivered'),
    );
    t.match(delivered.text, /data-label="Code">204</);
    t.match(delivered.text, /data-label="Attempts">1</);
    t.match(delivered.text, /data-label="Latency">\d+ ms</);
    t.match(delivered.text, '&quot;event&quot;: &quot;webhook.test&quot;', 'the payload, escaped');
    const deliveryId = /deliveries\/(\d+)\/redeliver/.exec(delivered.text)![1];
    t.equal((await client.post(`${page}/deliveries/${deliveryId}/redeliver`)).location, page);
    await receiver.waitFor(2);
    const twice = await waitFor(
      () => client.get(page),
      (response) => /data-label="Attempts">2</.test(response.text),
    );
    t.match(twice.text, /data-label="Attempts">2</);
    t.equal(receiver.received[1].headers['webhook-id'], receiver.received[0].headers['webhook-id'], 'same event id');

    t.match(
      (await client.get(page)).text,
      '<option value="subscription.expired">',
      'the test button offers every kind',
    );
    t.equal((await client.post(`${page}/test`, { kind: 'usage.threshold_reached' })).location, page);
    await receiver.waitFor(3);
    t.match(JSON.parse(receiver.received[2].body), {
      event: 'usage.threshold_reached',
      data: { test: true, limit: Number },
    });
    const unknownKind = await client.post(`${page}/test`, { kind: 'reading.maybe' });
    t.equal(unknownKind.status, 400);
    t.match(unknownKind.text, 'Unknown event kind');
  });

  t.test("webhooks: edit and delete an endpoint, and each attempt's outcome on its page", async (t) => {
    const { client } = await signedUp(service);
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    receiver.answer('/answers', (response) =>
      response.writeHead(200, { 'content-type': 'text/html' }).end(`<b>thanks & bye</b>${'x'.repeat(300)}`),
    );
    await client.post('/dashboard/webhooks', { url: `${receiver.url}/answers`, events: ['reading.completed'] });
    await client.post('/dashboard/webhooks', { url: `${receiver.url}/other`, events: ['reading.completed'] });
    const [answering, other] = await service.db
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('url', 'in', [`${receiver.url}/answers`, `${receiver.url}/other`])
      .orderBy('id')
      .execute();
    const page = `/dashboard/webhooks/${answering.id}`;

    await client.post(`${page}/test`);
    const answered = await waitFor(
      () => client.get(page),
      (response) => response.text.includes('badge-delivered'),
    );
    t.match(
      answered.text,
      /<li class="attempt">[^<]+: <span class="attempt-outcome">HTTP 200<\/span>, <span class="attempt-duration">\d+ ms<\/span>/,
    );
    t.match(
      answered.text,
      `<pre class="attempt-body">&lt;b&gt;thanks &amp; bye&lt;/b&gt;${'x'.repeat(200 - 'thanks & bye'.length - 7)}</pre>`,
      'the start of the answer, escaped',
    );

    const edited = await client.post(`${page}/edit`, {
      url: `${receiver.url}/closed`,
      events: ['reading.completed', 'reading.failed'],
    });
    t.equal(edited.location, page);
    const editedPage = (await client.get(page)).text;
    t.match(editedPage, `<h1 class="break">${receiver.url}/closed</h1>`);
    t.match(editedPage, 'reading.completed, reading.failed');
    const taken = await client.post(`${page}/edit`, { url: `${receiver.url}/other/`, events: ['reading.completed'] });
    t.equal(taken.status, 409);
    t.match(taken.text, `Endpoint ${other.id} already has this URL`);
    t.match(taken.text, `value="${receiver.url}/other/"`, 'the form keeps what was typed');
    const duplicateAdd = await client.post('/dashboard/webhooks', {
      url: `${receiver.url}/closed`,
      events: ['reading.completed'],
    });
    t.equal(duplicateAdd.status, 409);
    t.match(duplicateAdd.text, `Endpoint ${answering.id} already has this URL`);
    const invalid = await client.post(`${page}/edit`, { url: 'ftp://example.com', events: ['reading.completed'] });
    t.equal(invalid.status, 400);
    t.match(invalid.text, 'The URL must start with http:// or https://');

    // Nothing listens on the closed port: the attempt fails with the connection's error.
    const closed = await startWebhookReceiver();
    await closed.close();
    await client.post(`${page}/edit`, { url: `${closed.url}/gone`, events: ['reading.completed'] });
    await client.post(`${page}/test`);
    const refused = await waitFor(
      () => client.get(page),
      (response) => response.text.includes('ECONNREFUSED'),
    );
    t.match(
      refused.text,
      /<span class="attempt-outcome">connect ECONNREFUSED [^<]+<\/span>, <span class="attempt-duration">\d+ ms<\/span><\/li>/,
    );

    const deleted = await client.post(`${page}/delete`);
    t.equal(deleted.location, '/dashboard/webhooks');
    t.equal((await client.get(page)).status, 404);
    const list = await client.get('/dashboard/webhooks');
    t.match(list.text, 'Deliveries to deleted endpoints');
    t.match(list.text, /<td data-label="URL" class="break">http:\/\/127\.0\.0\.1:\d+\/gone<\/td>/);
    t.match(
      list.text,
      'Endpoint deleted by the account before this delivery succeeded',
      'the pending retry ended, visibly',
    );
    t.equal(list.text.match(/<tr class="deleted-endpoint-delivery">/g)?.length, 2, 'its earlier delivery is kept too');
    t.match(list.text, 'badge-delivered');
    t.equal((await client.post(`${page}/delete`)).status, 404);
  });

  t.test('usage shows a subscription whose period has ended as expired', async (t) => {
    const { client, accountId } = await signedUp(service);
    await setSubscription(service.db, { accountId, planCode: 'trial', until: new Date('2020-01-01T00:00:00Z') });
    t.match((await client.get('/dashboard/usage')).text, '<span class="badge badge-expired">expired</span>');
  });

  t.test('usage and readings show what the API did, with the photo and the counter box', async (t) => {
    const { client } = await signedUp(service);
    const { key } = await createKey(client, 'meters');
    const completed = await submitPhoto(service, { key, image: photo, sync: true });
    t.equal(completed.status, 200);
    const accepted = await submitPhoto(service, { key, image: photo });
    await waitForMeter(service.db, accepted.body.reference_id);
    service.model.setBehaviour({ answer: 'not a reading at all' });
    const failed = await submitPhoto(service, { key, image: photo, sync: true });
    service.model.setBehaviour({});
    t.equal(failed.status, 422);

    const usage = await client.get('/dashboard/usage');
    t.match(usage.text, '<strong>3</strong> of 100 requests');
    t.match(usage.text, /<meter[^>]*max="100"[^>]*value="3"/);
    t.match(usage.text, 'Plan <strong>Trial</strong>, <span class="badge badge-active">active</span>');
    t.match(usage.text, '<a href="/docs">API docs</a>', 'the navigation links to the API reference');
    const today = new Date().toISOString().slice(0, 10);
    t.match(usage.text, `<title>${today}: 3</title>`, 'today in the chart');
    t.equal(usage.text.match(/<rect class="bar"/g)?.length, 30, 'thirty days');

    const all = await client.get('/dashboard/readings');
    for (const reference of [completed.body.reference_id, accepted.body.reference_id, failed.body.reference_id])
      t.match(all.text, reference);
    t.match(all.text, '02390.276');
    const onlyFailed = await client.get('/dashboard/readings?status=failed');
    t.match(onlyFailed.text, failed.body.reference_id);
    t.notMatch(onlyFailed.text, completed.body.reference_id);

    const detailPath = `/dashboard/readings/${completed.body.reference_id}`;
    const withoutBox = await client.get(detailPath);
    t.match(withoutBox.text, '02390.276');
    t.notMatch(withoutBox.text, '<polygon');
    await sql`UPDATE readings SET counter_box = '[[40,60],[530,60],[530,160],[40,160]]' WHERE id = ${completed.body.reading_id}`.execute(
      service.db,
    );
    const detail = await client.get(detailPath);
    t.match(detail.text, /<img src="\/dashboard\/readings\/[0-9a-f-]+\/photo" width="\d+" height="\d+"/);
    t.match(detail.text, /<polygon class="counter-box" points="\d+,\d+ \d+,\d+ \d+,\d+ \d+,\d+">/);
    const image = await client.get(`${detailPath}/photo`);
    t.equal(image.status, 200);
    t.equal(image.headers.get('content-type'), 'image/jpeg');
    t.same([...image.bytes.subarray(0, 2)], [0xff, 0xd8], 'a JPEG');
    t.equal((await client.get('/dashboard/readings/not-a-uuid')).status, 404);

    await sql`UPDATE submissions SET created_at = now() - interval '91 days' WHERE reference_id = ${completed.body.reference_id}`.execute(
      service.db,
    );
    t.equal((await purgeOldData(service, { imageRetentionDays: 90, webhookRetentionDays: 0 })).images, 1);
    const removed = await client.get(detailPath);
    t.match(removed.text, /The photo was deleted on [^<]+: photos are kept for a limited time\. The reading stays\./);
    t.notMatch(removed.text, '<img');
    t.match(removed.text, '02390.276', 'the reading stays');
    t.equal((await client.get(`${detailPath}/photo`)).status, 404);
  });

  t.test("an account sees only its own things: another account's ids give 404", async (t) => {
    const owner = await signedUp(service);
    const { key } = await createKey(owner.client, 'owner key');
    const keyId = /action="\/dashboard\/keys\/(\d+)\/disable"/.exec(
      (await owner.client.get('/dashboard/keys')).text,
    )![1];
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    await owner.client.post('/dashboard/webhooks', {
      url: `${receiver.url}/owner`,
      events: ['reading.completed', 'reading.failed'],
    });
    const endpoint = await service.db
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('url', '=', `${receiver.url}/owner`)
      .executeTakeFirstOrThrow();
    await owner.client.post(`/dashboard/webhooks/${endpoint.id}/test`);
    await receiver.waitFor(1);
    const delivery = await waitFor(
      () =>
        service.db
          .selectFrom('webhook_deliveries')
          .select(['id', 'status'])
          .where('endpoint_id', '=', endpoint.id)
          .executeTakeFirstOrThrow(),
      (row) => row.status !== 'pending',
    );
    const reading = await submitPhoto(service, { key, image: photo, sync: true });

    const intruder = await signedUp(service);
    const other = intruder.client;
    const gets = [
      `/dashboard/webhooks/${endpoint.id}`,
      `/dashboard/readings/${reading.body.reference_id}`,
      `/dashboard/readings/${reading.body.reference_id}/photo`,
    ];
    for (const path of gets) t.equal((await other.get(path)).status, 404, `GET ${path}`);
    const posts = [
      `/dashboard/keys/${keyId}/disable`,
      `/dashboard/keys/${keyId}/enable`,
      `/dashboard/keys/${keyId}/delete`,
      `/dashboard/webhooks/${endpoint.id}/secret`,
      `/dashboard/webhooks/${endpoint.id}/rotate-secret`,
      `/dashboard/webhooks/${endpoint.id}/disable`,
      `/dashboard/webhooks/${endpoint.id}/test`,
      `/dashboard/webhooks/${endpoint.id}/edit`,
      `/dashboard/webhooks/${endpoint.id}/delete`,
      `/dashboard/webhooks/${endpoint.id}/deliveries/${delivery.id}/redeliver`,
    ];
    for (const path of posts) {
      const response = await other.post(path);
      t.equal(response.status, 404, `POST ${path}`);
      t.notMatch(response.text, /whsec_/);
    }
    for (const path of ['/dashboard/keys', '/dashboard/webhooks', '/dashboard/readings']) {
      const page = await other.get(path);
      t.notMatch(page.text, 'owner key', `${path} lists nothing of the other account`);
      t.notMatch(page.text, receiver.url);
      t.notMatch(page.text, reading.body.reference_id);
    }
    t.match((await other.get('/dashboard/usage')).text, '<strong>0</strong> of 100 requests');
    t.equal((await submitPhoto(service, { key, image: photo, sync: true })).status, 200, "the owner's key still works");
    t.equal(receiver.received.length, 1, 'no test event or redelivery reached the owner');
  });
});
