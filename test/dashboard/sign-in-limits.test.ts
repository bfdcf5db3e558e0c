import { sql } from 'kysely';
import t from 'tap';
import { MAX_FAILED_LOGINS_PER_EMAIL, MAX_FAILED_LOGINS_PER_IP } from '../../src/accounts/sign-in.ts';
import { loadConfig } from '../../src/config.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import { startTestService, waitFor } from '../helpers/service.ts';

const PASSWORD = 'correct horse battery';

t.test('sign-in limits', async (t) => {
  const service = await startTestService(t, { worker: false });

  t.test(
    'a burst of concurrent wrong sign-ins is refused from the 6th, and the right password inside it too',
    async (t) => {
      const email = 'burst@example.com';
      t.equal((await new DashboardClient(service.url).signUp(email, PASSWORD)).status, 303);
      const attacker = new DashboardClient(service.url);
      await attacker.get('/dashboard/login');
      const burst = Array.from({ length: 50 }, (_, index) =>
        attacker.post('/dashboard/login', { email, password: `guess ${index}` }),
      );
      await waitFor(
        () =>
          service.db
            .selectFrom('login_attempts')
            .select(sql<number>`count(*)::int`.as('n'))
            .where('email', '=', email)
            .executeTakeFirstOrThrow(),
        (rows) => rows.n >= MAX_FAILED_LOGINS_PER_EMAIL,
      );
      const right = await attacker.post('/dashboard/login', { email, password: PASSWORD });
      const statuses = (await Promise.all(burst)).map((response) => response.status);
      t.equal(right.status, 429, 'the right password is refused once the burst has used up the limit');
      t.equal(
        statuses.filter((status) => status === 401).length,
        MAX_FAILED_LOGINS_PER_EMAIL,
        'only 5 passwords were checked',
      );
      t.equal(
        statuses.filter((status) => status === 429).length,
        50 - MAX_FAILED_LOGINS_PER_EMAIL,
        'every other try was refused',
      );
    },
  );

  /** One sign-in as it reaches the app from `remoteAddress`, the peer of the TCP connection. */
  async function signInFrom(remoteAddress: string, headers: Record<string, string> = {}) {
    const response = await service.app.inject({
      method: 'POST',
      url: '/dashboard/login',
      remoteAddress,
      headers: { cookie: 'meterlens_csrf=token', ...headers },
      payload: { _csrf: 'token', email: `nobody.${Math.random()}@example.com`, password: 'not the password' },
    });
    return response.statusCode;
  }

  t.test('X-Forwarded-For is believed only from a trusted proxy (default: private ranges)', async (t) => {
    const client = '198.51.100.7';
    await service.db
      .insertInto('login_attempts')
      .values(
        Array.from({ length: MAX_FAILED_LOGINS_PER_IP }, (_, index) => ({
          email: `spray${index}@example.com`,
          ip: client,
        })),
      )
      .execute();
    for (const forwarded of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
      t.equal(
        await signInFrom(client, { 'x-forwarded-for': forwarded }),
        429,
        `a direct client claiming ${forwarded} is still ${client}`,
      );
    }
    t.equal(
      await signInFrom('10.1.2.3', { 'x-forwarded-for': client }),
      429,
      'a platform router on a private address is believed',
    );
    t.equal(
      await signInFrom('10.1.2.3', { 'x-forwarded-for': '203.0.113.4' }),
      401,
      'so its other clients are not throttled',
    );
  });

  t.test('TRUST_PROXY names the proxies; none trusts no header', async (t) => {
    t.same(loadConfig({}).trustProxy, ['loopback', 'linklocal', 'uniquelocal']);
    t.same(loadConfig({ TRUST_PROXY: 'none' }).trustProxy, []);
    t.same(loadConfig({ TRUST_PROXY: '203.0.113.0/24, 2001:db8::1,loopback' }).trustProxy, [
      '203.0.113.0/24',
      '2001:db8::1',
      'loopback',
    ]);
    t.throws(() => loadConfig({ TRUST_PROXY: 'heroku' }), /TRUST_PROXY: "heroku" is not an IP address/);
  });
});
