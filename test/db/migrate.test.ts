import t from 'tap';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { createTestDatabase } from '../helpers/database.ts';

t.test('migrations are recorded and applied once, also when run concurrently', async (t) => {
  const database = await createTestDatabase();
  t.teardown(database.drop);

  t.same(await migrate(database.url), [], 'the template already holds every migration');
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  t.teardown(() => client.end());
  await client.query('DROP TABLE schema_migrations');
  await client.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');

  const [first, second] = await Promise.all([migrate(database.url), migrate(database.url)]);
  const appliedTwice = [...first, ...second].sort();
  t.same(appliedTwice, [...new Set(appliedTwice)], 'no file is applied by both runs');
  t.ok(appliedTwice.includes('001_plans_accounts_subscriptions.sql'));
  const plans = await client.query('SELECT code FROM plans ORDER BY monthly_request_limit');
  t.same(
    plans.rows.map((row) => row.code),
    ['trial', 'starter', 'pro', 'scale'],
    'seed plans exist once',
  );
});
