import { type AddressInfo, createServer, type Socket } from 'node:net';
import { sql } from 'kysely';
import t from 'tap';
import { buildApp } from '../../src/app.ts';
import { MAX_RESET_REQUESTS_PER_EMAIL, MAX_RESET_REQUESTS_PER_IP } from '../../src/accounts/password-reset.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import { startTestService } from '../helpers/service.ts';
import { startSmtpServer, type ReceivedMail } from '../helpers/smtp.ts';

const PASSWORD = 'correct horse battery';
const NEW_PASSWORD = 'a brand new passphrase';
let emailCount = 0;
const newEmail = () => `reset${++emailCount}.${process.pid}@example.com`;

const RESET_LINK = /(https?:\/\/\S+\/dashboard\/reset-password\?token=[A-Za-z0-9_-]+)/;

function linkIn(mail: ReceivedMail): string {
  const link = RESET_LINK.exec(mail.text)?.[1];
  if (!link) throw new Error(`no reset link in: ${mail.text}`);
  return link;
}

const pathOf = (link: string) => new URL(link).pathname + new URL(link).search;
const tokenOf = (link: string) => new URL(link).searchParams.get('token')!;

t.test('password reset through the mail', async (t) => {
  const smtp = await startSmtpServer();
  t.teardown(() => smtp.close());
  const service = await startTestService(t, {
    worker: false,
    env: { SMTP_URL: smtp.url, MAIL_FROM: 'Meterlens <noreply@meters.example.com>' },
  });

  async function user(): Promise<string> {
    const email = newEmail();
    if ((await new DashboardClient(service.url).signUp(email, PASSWORD)).status !== 303)
      throw new Error('sign-up failed');
    // The sign-up's verification mail.
    await smtp.waitFor(smtp.received.filter((mail) => mail.to[0] !== email).length + 1);
    return email;
  }

  async function requestLink(
    email: string,
    client = new DashboardClient(service.url),
  ): Promise<{ page: string; status: number }> {
    await client.get('/dashboard/forgot-password');
    const response = await client.post('/dashboard/forgot-password', { email });
    return { page: response.text, status: response.status };
  }

  const resetMails = (email: string) =>
    smtp.received.filter((mail) => mail.to[0] === email && mail.subject === 'Reset your Meterlens password');

  /** Asks for a link and returns the reset link of the mail that arrives for it. */
  async function mailedLink(email: string): Promise<string> {
    const before = resetMails(email).length;
    await requestLink(email);
    const deadline = Date.now() + 10_000;
    while (resetMails(email).length === before) {
      if (Date.now() > deadline) throw new Error(`no reset mail for ${email}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return linkIn(resetMails(email)[before]);
  }

  t.test('the link mailed sets a new password once, and every session of the user ends', async (t) => {
    const email = await user();
    const laptop = new DashboardClient(service.url);
    const phone = new DashboardClient(service.url);
    t.equal((await laptop.signIn(email, PASSWORD)).status, 303);
    t.equal((await phone.signIn(email, PASSWORD)).status, 303);

    const login = await new DashboardClient(service.url).get('/dashboard/login');
    t.match(login.text, 'href="/dashboard/forgot-password"', 'the sign-in page links to it');
    const { page, status } = await requestLink(email.toUpperCase());
    t.equal(status, 200);
    t.match(page, 'we have mailed it a link to choose a new password. The link works once, within 1 hour.');
    const link = await mailedLink(email);
    t.ok(link.startsWith(`${service.url}/dashboard/reset-password?token=`));

    const browser = new DashboardClient(service.url);
    const form = await browser.get(pathOf(link));
    t.equal(form.status, 200);
    t.match(form.text, 'Choose a new password');
    const mismatch = await browser.post('/dashboard/reset-password', {
      token: tokenOf(link),
      password: NEW_PASSWORD,
      password_confirmation: `${NEW_PASSWORD}!`,
    });
    t.equal(mismatch.status, 400);
    t.match(mismatch.text, 'The two passwords are not the same');
    const short = await browser.post('/dashboard/reset-password', {
      token: tokenOf(link),
      password: 'short',
      password_confirmation: 'short',
    });
    t.equal(short.status, 400);
    t.match(short.text, 'The password must have at least 10 characters');
    t.equal((await laptop.get('/dashboard/keys')).status, 200, 'refused tries change nothing');

    const done = await browser.post('/dashboard/reset-password', {
      token: tokenOf(link),
      password: NEW_PASSWORD,
      password_confirmation: NEW_PASSWORD,
    });
    t.equal(done.status, 303);
    t.equal(done.location, '/dashboard');
    t.equal((await browser.get('/dashboard/keys')).status, 200, 'the browser that set it is signed in afresh');
    t.equal((await laptop.get('/dashboard/keys')).location, '/dashboard/login', 'the other sessions have ended');
    t.equal((await phone.get('/dashboard/keys')).location, '/dashboard/login');
    t.equal(
      (await new DashboardClient(service.url).signIn(email, PASSWORD)).status,
      401,
      'the old password no longer works',
    );
    t.equal((await new DashboardClient(service.url).signIn(email, NEW_PASSWORD)).status, 303, 'the new one does');

    const reused = await new DashboardClient(service.url).get(pathOf(link));
    t.equal(reused.status, 410, 'the link works once');
    t.match(reused.text, 'This link has already been used. Sign in, or ask for a new link.');
    const reposted = await browser.post('/dashboard/reset-password', {
      token: tokenOf(link),
      password: PASSWORD,
      password_confirmation: PASSWORD,
    });
    t.equal(reposted.status, 410);
  });

  t.test('a new password also ends the other reset links; an expired or unknown link is refused', async (t) => {
    const email = await user();
    const first = await mailedLink(email);
    const second = await mailedLink(email);
    t.not(first, second);
    const browser = new DashboardClient(service.url);
    await browser.get(pathOf(second));
    t.equal(
      (
        await browser.post('/dashboard/reset-password', {
          token: tokenOf(second),
          password: NEW_PASSWORD,
          password_confirmation: NEW_PASSWORD,
        })
      ).status,
      303,
    );
    t.equal((await new DashboardClient(service.url).get(pathOf(first))).status, 410, 'the earlier link is used up too');

    const expiring = await mailedLink(email);
    await sql`UPDATE password_resets SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`.execute(
      service.db,
    );
    const expired = await new DashboardClient(service.url).get(pathOf(expiring));
    t.equal(expired.status, 410);
    t.match(expired.text, 'This link has expired (reset links work for 1 hour). Ask for a new one.');
    const unknown = await new DashboardClient(service.url).get('/dashboard/reset-password?token=guess');
    t.equal(unknown.status, 400);
    t.match(unknown.text, 'This link is not valid. Copy the whole link from the mail, or ask for a new one.');
  });

  t.test('an email with no user gets the same answer and no mail', async (t) => {
    const email = await user();
    const nobody = newEmail();
    const unknown = await requestLink(nobody);
    const known = await requestLink(email);
    t.equal(unknown.status, known.status);
    const normalise = (page: string, typed: string) =>
      page.replaceAll(typed, 'EMAIL').replace(/value="[^"]+"/g, 'value=""');
    t.equal(normalise(unknown.page, nobody), normalise(known.page, email), 'the same page');
    while (resetMails(email).length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    // The unknown address was asked for first: had anything been sent to it, it would be here by now.
    await new Promise((resolve) => setTimeout(resolve, 200));
    t.equal(
      smtp.received.filter((mail) => mail.to[0] === nobody).length,
      0,
      'nothing is sent to an address without a user',
    );
  });

  t.test(
    `requests are limited to ${MAX_RESET_REQUESTS_PER_EMAIL} per email and ${MAX_RESET_REQUESTS_PER_IP} per address an hour, users or not`,
    async (t) => {
      for (const email of [await user(), newEmail()]) {
        for (let sent = 0; sent < MAX_RESET_REQUESTS_PER_EMAIL; sent++) t.equal((await requestLink(email)).status, 200);
        const refused = await requestLink(email);
        t.equal(refused.status, 429, email);
        t.match(refused.page, 'Too many requests for a reset link. Try again in 60 minutes.');
      }
      const client = new DashboardClient(service.url);
      for (let sent = 0; sent < MAX_RESET_REQUESTS_PER_IP; sent++)
        t.equal((await requestLink(newEmail(), client)).status, 200);
      t.equal((await requestLink(newEmail(), client)).status, 429, 'per client address');
      t.equal((await requestLink('not an email')).status, 400);
    },
  );

  t.test('the answer does not wait for the mail: a mail server that never answers does not slow it', async (t) => {
    const email = await user();
    const connections = new Set<Socket>();
    const silent = createServer((socket) => connections.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    t.teardown(() => {
      for (const socket of connections) socket.destroy();
      return new Promise((resolve) => silent.close(resolve));
    });
    const smtpUrl = `smtp://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const app = await buildApp(
      { ...service, config: { ...service.config, smtp: { url: smtpUrl, from: 'noreply@meters.example.com' } } },
      { logger: false },
    );
    t.teardown(() => app.close());
    const started = Date.now();
    const response = await app.inject({
      method: 'POST',
      url: '/dashboard/forgot-password',
      headers: { cookie: 'meterlens_csrf=token' },
      payload: { _csrf: 'token', email },
    });
    t.equal(response.statusCode, 200);
    t.match(response.body, 'we have mailed it a link');
    t.ok(
      Date.now() - started < 5_000,
      `answered in ${Date.now() - started} ms, though the mail waits for a server that stays silent`,
    );
  });
});

t.test('without SMTP_URL "Forgot password" sends the user to the operator', async (t) => {
  const service = await startTestService(t, { worker: false });
  const client = new DashboardClient(service.url);
  const page = await client.get('/dashboard/forgot-password');
  t.match(page.text, 'This Meterlens sends no mail. Ask its operator for a link to choose a new password');
  await client.get('/dashboard/login');
  const refused = await client.post('/dashboard/forgot-password', { email: 'someone@example.com' }, {});
  t.equal(refused.status, 503);
});
