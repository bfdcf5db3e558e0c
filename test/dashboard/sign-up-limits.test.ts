import { sql } from 'kysely';
import t from 'tap';
import { MAX_SIGNUPS_PER_IP } from '../../src/accounts/sign-up.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import { startTestService } from '../helpers/service.ts';

let emailCount = 0;
const newEmail = () => `signup${++emailCount}.${process.pid}@example.com`;

t.test('sign-up limits', async (t) => {
  const service = await startTestService(t, { worker: false });
  const accounts = async () =>
    (await service.db.selectFrom('accounts').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow()).n;

  t.test(
    `a burst of 20 sign-ups from one client creates ${MAX_SIGNUPS_PER_IP} accounts; another client still signs up`,
    async (t) => {
      const before = await accounts();
      const client = new DashboardClient(service.url);
      await client.get('/dashboard/signup');
      const burst = await Promise.all(
        Array.from({ length: 20 }, () =>
          client.post('/dashboard/signup', {
            organisation: 'Free Water',
            email: newEmail(),
            password: 'correct horse battery',
          }),
        ),
      );
      const statuses = burst.map((response) => response.status);
      t.equal(
        statuses.filter((status) => status === 303).length,
        MAX_SIGNUPS_PER_IP,
        'only the first ones were created',
      );
      t.equal(
        statuses.filter((status) => status === 429).length,
        20 - MAX_SIGNUPS_PER_IP,
        'every other one was refused',
      );
      t.match(
        burst.find((response) => response.status === 429)?.text,
        'Too many sign-ups from your address. Try again in 60 minutes.',
      );
      t.equal((await accounts()) - before, MAX_SIGNUPS_PER_IP, 'and no account was made for them');

      const refused = await new DashboardClient(service.url, client.address).signUp(newEmail());
      t.equal(refused.status, 429, 'a new browser at the same address is refused afterwards too');
      t.match(refused.text, '<form method="post" action="/dashboard/signup"', 'on the sign-up page');
      t.equal((await new DashboardClient(service.url).signUp(newEmail())).status, 303, 'another address signs up');
    },
  );

  t.test('a sign-up that fails after the cheap checks still counts; one the form refuses does not', async (t) => {
    const address = new DashboardClient(service.url).address;
    const fromAddress = () => new DashboardClient(service.url, address);
    const email = newEmail();
    t.equal((await fromAddress().signUp(email)).status, 303);
    for (let attempt = 1; attempt < MAX_SIGNUPS_PER_IP; attempt++)
      t.equal((await fromAddress().signUp(email)).status, 400, 'the email is taken');
    const short = await fromAddress().signUp(newEmail(), 'short');
    t.equal(short.status, 400, 'a short password is refused before the limit is looked at');
    t.equal((await fromAddress().signUp(newEmail())).status, 429, 'the address has used its sign-ups');
  });

  /** One sign-up as it reaches the app from `remoteAddress`, the peer of the TCP connection. */
  async function signUpFrom(remoteAddress: string, headers: Record<string, string> = {}) {
    const response = await service.app.inject({
      method: 'POST',
      url: '/dashboard/signup',
      remoteAddress,
      headers: { cookie: 'meterlens_csrf=token', ...headers },
      payload: { _csrf: 'token', organisation: 'Acme', email: newEmail(), password: 'correct horse battery' },
    });
    return response.statusCode;
  }

  t.test(
    'the address is the one TRUST_PROXY makes it: X-Forwarded-For is believed only from a trusted proxy',
    async (t) => {
      const client = '198.51.100.7';
      await service.db
        .insertInto('signup_attempts')
        .values(Array.from({ length: MAX_SIGNUPS_PER_IP }, () => ({ ip: client })))
        .execute();
      for (const forwarded of ['203.0.113.1', '203.0.113.2']) {
        t.equal(
          await signUpFrom(client, { 'x-forwarded-for': forwarded }),
          429,
          `a direct client claiming ${forwarded} is still ${client}`,
        );
      }
      t.equal(
        await signUpFrom('10.1.2.3', { 'x-forwarded-for': client }),
        429,
        'a platform router on a private address is believed',
      );
      t.equal(
        await signUpFrom('10.1.2.3', { 'x-forwarded-for': '203.0.113.4' }),
        303,
        'so its other clients are not throttled',
      );
    },
  );
});
