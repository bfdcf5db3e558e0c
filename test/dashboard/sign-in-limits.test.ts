import { sql } from 'kysely';
import t from 'tap';
import { MAX_FAILED_LOGINS_PER_EMAIL } from '../../src/accounts/users.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import { startTestService, waitFor } from '../helpers/service.ts';

const PASSWORD = 'correct horse battery';

t.test('sign-in limits', async (t) => {
  const service = await startTestService(t, { worker: false });

  t.test('a burst of concurrent wrong sign-ins is refused from the 6th, and the right password inside it too', async (t) => {
    const email = 'burst@example.com';
    t.equal((await new DashboardClient(service.url).signUp(email, PASSWORD)).status, 303);
    const attacker = new DashboardClient(service.url);
    await attacker.get('/dashboard/login');
    const burst = Array.from({ length: 50 }, (_, index) => attacker.post('/dashboard/login', { email, password: `guess ${index}` }));
    await waitFor(
      () => service.db.selectFrom('login_attempts').select(sql<number>`count(*)::int`.as('n')).where('email', '=', email).executeTakeFirstOrThrow(),
      (rows) => rows.n >= MAX_FAILED_LOGINS_PER_EMAIL,
    );
    const right = await attacker.post('/dashboard/login', { email, password: PASSWORD });
    const statuses = (await Promise.all(burst)).map((response) => response.status);
    t.equal(right.status, 429, 'the right password is refused once the burst has used up the limit');
    t.equal(statuses.filter((status) => status === 401).length, MAX_FAILED_LOGINS_PER_EMAIL, 'only 5 passwords were checked');
    t.equal(statuses.filter((status) => status === 429).length, 50 - MAX_FAILED_LOGINS_PER_EMAIL, 'every other try was refused');
  });
});
