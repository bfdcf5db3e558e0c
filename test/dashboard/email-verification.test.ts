import { sql } from 'kysely';
import t from 'tap';
import { createAccount } from '../../src/accounts/accounts.ts';
import { MAX_VERIFICATION_MAILS_PER_HOUR } from '../../src/accounts/email-verification.ts';
import { createUser } from '../../src/accounts/users.ts';
import { buildApp } from '../../src/app.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import { startTestService, submitPhoto, type TestService } from '../helpers/service.ts';
import { startSmtpServer, type ReceivedMail } from '../helpers/smtp.ts';

const PASSWORD = 'correct horse battery';
const MAIL_FROM = 'Meterlens <noreply@meters.example.com>';
let emailCount = 0;
const newEmail = () => `verify${++emailCount}.${process.pid}@example.com`;

const LINK = /(https?:\/\/\S+\/dashboard\/verify-email\?token=[A-Za-z0-9_-]+)/;

function linkIn(mail: ReceivedMail): string {
  const link = LINK.exec(mail.text)?.[1];
  if (!link) throw new Error(`no verification link in: ${mail.text}`);
  return link;
}

/** The path and query of a link, to follow it with a client of the service under test. */
const pathOf = (link: string) => {
  const url = new URL(link);
  return url.pathname + url.search;
};

t.test('with SMTP_URL, a self-signed-up account gets its trial once its email is verified', async (t) => {
  const smtp = await startSmtpServer();
  t.teardown(() => smtp.close());
  const service = await startTestService(t, { worker: false, env: { SMTP_URL: smtp.url, MAIL_FROM } });
  const photo = await renderMeterPhoto();

  const subscription = (accountId: string) =>
    service.db.selectFrom('subscriptions').selectAll().where('account_id', '=', accountId).executeTakeFirst();
  const accountOf = async (email: string) =>
    (await service.db.selectFrom('users').select('account_id').where('email', '=', email).executeTakeFirstOrThrow())
      .account_id;

  /** Signs up and returns the client, the account and the mail it got. */
  async function signedUp(): Promise<{
    client: DashboardClient;
    email: string;
    accountId: string;
    mail: ReceivedMail;
  }> {
    const client = new DashboardClient(service.url);
    const email = newEmail();
    const mailsBefore = smtp.received.length;
    const response = await client.signUp(email, PASSWORD);
    if (response.status !== 303) throw new Error(`sign-up answered ${response.status}: ${response.text}`);
    const mails = await smtp.waitFor(mailsBefore + 1);
    return { client, email, accountId: await accountOf(email), mail: mails[mailsBefore] };
  }

  t.test('the mail, the waiting account, the refused key, the link, and the trial', async (t) => {
    const form = await new DashboardClient(service.url).get('/dashboard/signup');
    t.match(form.text, 'We will mail you a link to verify your email address', 'the sign-up page says so');

    const { client, email, accountId, mail } = await signedUp();
    t.same(mail.to, [email], 'one mail, to the new user');
    t.equal(mail.from, 'noreply@meters.example.com', 'from MAIL_FROM');
    t.equal(mail.subject, 'Verify your email for Meterlens');
    const link = linkIn(mail);
    t.ok(link.startsWith(`${service.url}/dashboard/verify-email?token=`), 'the link points at PUBLIC_URL');

    t.notOk(await subscription(accountId), 'no subscription yet');
    const page = await client.get('/dashboard/keys');
    t.equal(page.status, 200, 'the user is signed in');
    t.match(page.text, 'Check your mail');
    t.match(page.text, `Follow the link we sent to <strong>${email}</strong>`);
    t.match(page.text, 'action="/dashboard/verify-email/resend"', 'and may ask for it again');

    const created = await client.post('/dashboard/keys', { project_name: 'field app' });
    const key = /<code id="secret-value" class="secret">(meterlens_live_[0-9a-f]{32})<\/code>/.exec(created.text)?.[1];
    t.ok(key, 'a key can be made while waiting');
    const refused = await submitPhoto(service, { key, image: photo });
    t.equal(refused.status, 422);
    t.same(
      refused.body,
      { errors: { subscription: ['No subscription: the account needs an active plan to use the API'] } },
      'the API refuses it for the subscription',
    );

    await client.post('/dashboard/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['subscription.created'] });
    const elsewhere = new DashboardClient(service.url);
    const verified = await elsewhere.get(pathOf(link));
    t.equal(verified.status, 200, 'the link works in a browser that is not signed in');
    t.match(verified.text, 'Your email address is verified and your trial has started');
    const trial = await subscription(accountId);
    t.equal(trial?.plan_code, 'trial');
    t.equal(trial?.status, 'active');
    const days = (trial!.period_end.getTime() - trial!.period_start.getTime()) / 86_400_000;
    t.ok(days >= 28 && days <= 31, 'for one month');
    const announced = await service.db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .select(['d.event_type', 'd.payload'])
      .where('e.account_id', '=', accountId)
      .execute();
    t.match(
      announced,
      [{ event_type: 'subscription.created', payload: { data: { plan: 'trial', status: 'active', previous: null } } }],
      'announced to the endpoint added while waiting',
    );
    t.equal((await submitPhoto(service, { key, image: photo })).status, 202, 'the key now works');
    t.notMatch((await client.get('/dashboard/keys')).text, 'Check your mail', 'the dashboard no longer asks');

    const reused = await elsewhere.get(pathOf(link));
    t.equal(reused.status, 410, 'a link works once');
    t.match(reused.text, 'This link has already been used.');
    t.equal(
      (await client.post('/dashboard/verify-email/resend')).location,
      '/dashboard',
      'a verified user has nothing to resend',
    );
  });

  t.test('an expired link is refused and starts nothing; a link sent again works', async (t) => {
    const { client, email, accountId, mail } = await signedUp();
    await sql`UPDATE email_verifications SET expires_at = now() - interval '1 second' FROM users WHERE users.id = user_id AND users.email = ${email}`.execute(
      service.db,
    );
    const expired = await client.get(pathOf(linkIn(mail)));
    t.equal(expired.status, 410);
    t.match(expired.text, 'This link has expired (links work for 24 hours). Sign in and send a new one.');
    t.notOk(await subscription(accountId), 'no trial');

    const mailsBefore = smtp.received.length;
    const again = await client.post('/dashboard/verify-email/resend');
    t.equal(again.status, 200);
    t.match(again.text, `We sent a new link to ${email}. It works once, within 24 hours.`);
    const [, second] = (await smtp.waitFor(mailsBefore + 1)).filter((received) => received.to[0] === email);
    t.ok(second, 'a second mail arrived');
    t.equal((await client.get(pathOf(linkIn(second)))).status, 200);
    t.equal((await subscription(accountId))?.plan_code, 'trial');
  });

  t.test('a link followed twice at once works once', async (t) => {
    const { accountId, mail } = await signedUp();
    const path = pathOf(linkIn(mail));
    const statuses = (await Promise.all([0, 1, 2].map(() => new DashboardClient(service.url).get(path)))).map(
      (response) => response.status,
    );
    t.same(statuses.sort(), [200, 410, 410]);
    t.equal(
      (await service.db.selectFrom('subscriptions').select('account_id').where('account_id', '=', accountId).execute())
        .length,
      1,
    );
  });

  t.test('a link that is no link is refused clearly', async (t) => {
    const client = new DashboardClient(service.url);
    for (const path of ['/dashboard/verify-email?token=not-a-token', '/dashboard/verify-email']) {
      const response = await client.get(path);
      t.equal(response.status, 400, path);
      t.match(
        response.text,
        'This link is not valid. Copy the whole link from the mail, or sign in and send a new one.',
      );
    }
  });

  t.test(
    `"send it again" is limited to ${MAX_VERIFICATION_MAILS_PER_HOUR} mails an hour, the first included`,
    async (t) => {
      const { client, mail } = await signedUp();
      await client.get('/dashboard/keys');
      for (let sent = 1; sent < MAX_VERIFICATION_MAILS_PER_HOUR; sent++)
        t.equal((await client.post('/dashboard/verify-email/resend')).status, 200);
      const refused = await client.post('/dashboard/verify-email/resend');
      t.equal(refused.status, 429);
      t.match(refused.text, `${MAX_VERIFICATION_MAILS_PER_HOUR} mails were sent in the last hour.`);
      t.equal(
        smtp.received.filter((received) => received.to[0] === mail.to[0]).length,
        MAX_VERIFICATION_MAILS_PER_HOUR,
      );
      t.equal(
        (await client.post('/dashboard/verify-email/resend', { _csrf: 'forged' })).status,
        403,
        'the form carries the CSRF token',
      );
      t.equal(
        (await new DashboardClient(service.url).post('/dashboard/verify-email/resend')).location,
        '/dashboard/login',
        'signed out: sign in first',
      );
    },
  );

  t.test('PUBLIC_URL, when set, is where the link points', async (t) => {
    const app = await buildApp(
      { ...service, config: { ...service.config, publicUrl: 'https://meters.example.com' } },
      { logger: false },
    );
    t.teardown(() => app.close());
    const email = newEmail();
    const mailsBefore = smtp.received.length;
    const response = await app.inject({
      method: 'POST',
      url: '/dashboard/signup',
      headers: { cookie: 'meterlens_csrf=token', host: 'attacker.example.net' },
      payload: { _csrf: 'token', organisation: 'Acme', email, password: PASSWORD },
    });
    t.equal(response.statusCode, 303);
    const [mail] = (await smtp.waitFor(mailsBefore + 1)).slice(mailsBefore);
    t.ok(
      linkIn(mail).startsWith('https://meters.example.com/dashboard/verify-email?token='),
      'not the Host the request named',
    );
  });

  t.test(
    'a sign-up while the SMTP server is down still creates the account, which can send the link later',
    async (t) => {
      const config = { ...service.config, smtp: { url: 'smtp://127.0.0.1:1', from: MAIL_FROM } };
      const app = await buildApp({ ...service, config }, { logger: false });
      t.teardown(() => app.close());
      const email = newEmail();
      const response = await app.inject({
        method: 'POST',
        url: '/dashboard/signup',
        headers: { cookie: 'meterlens_csrf=token' },
        payload: { _csrf: 'token', organisation: 'Acme', email, password: PASSWORD },
      });
      t.equal(response.statusCode, 303);
      t.notOk(await subscription(await accountOf(email)), 'waiting for its verification');
      const session = response.cookies.find((cookie) => cookie.name === 'meterlens_session')!.value;
      const keys = await app.inject({ url: '/dashboard/keys', cookies: { meterlens_session: session } });
      const csrf = /name="_csrf" value="([^"]+)"/.exec(keys.body)![1];
      const resend = await app.inject({
        method: 'POST',
        url: '/dashboard/verify-email/resend',
        cookies: { meterlens_session: session },
        payload: { _csrf: csrf },
      });
      t.equal(resend.statusCode, 503);
      t.match(resend.body, 'The mail could not be sent just now. Try again in a few minutes.');
    },
  );

  t.test('users the operator creates (meterlens accounts/users create) are not asked to verify', async (t) => {
    const account = await createAccount(service.db, { name: 'Operator Water', planCode: 'starter' });
    const email = newEmail();
    await createUser(service.db, { accountId: account.id, email, password: PASSWORD });
    const client = new DashboardClient(service.url);
    t.equal((await client.signIn(email, PASSWORD)).status, 303);
    t.notMatch((await client.get('/dashboard/keys')).text, 'Check your mail');
    t.equal((await subscription(account.id))?.plan_code, 'starter');
  });

  t.test('a trial waiting for verification does not replace a plan the operator set meanwhile', async (t) => {
    const { accountId, mail } = await signedUp();
    await service.db
      .insertInto('subscriptions')
      .values({
        account_id: accountId,
        plan_code: 'pro',
        status: 'active',
        period_start: new Date(),
        period_end: new Date(Date.now() + 86_400_000),
      })
      .execute();
    t.equal((await new DashboardClient(service.url).get(pathOf(linkIn(mail)))).status, 200);
    t.equal((await subscription(accountId))?.plan_code, 'pro');
  });
});

t.test('without SMTP_URL, sign-up sends nothing and the trial starts at once', async (t) => {
  const service: TestService = await startTestService(t, { worker: false });
  const client = new DashboardClient(service.url);
  const email = newEmail();
  t.notMatch((await client.get('/dashboard/signup')).text, 'We will mail you a link');
  t.equal((await client.signUp(email, PASSWORD)).status, 303);
  const row = await service.db
    .selectFrom('users as u')
    .innerJoin('subscriptions as s', 's.account_id', 'u.account_id')
    .select('s.plan_code')
    .where('u.email', '=', email)
    .executeTakeFirst();
  t.equal(row?.plan_code, 'trial');
  t.notMatch((await client.get('/dashboard/keys')).text, 'Check your mail');
});
