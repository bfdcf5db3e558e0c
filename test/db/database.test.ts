import { sql } from 'kysely';
import t from 'tap';
import { createDatabase } from '../../src/db/database.ts';
import { createTestDatabase } from '../helpers/database.ts';

t.test('a connection the server closes while it is checked out fails its query, not the process', async (t) => {
  const database = await createTestDatabase();
  t.teardown(database.drop);
  const db = createDatabase(database.url);
  t.teardown(() => db.destroy());

  const terminated = db.transaction().execute(async (tx) => {
    await sql`SELECT pg_terminate_backend(pg_backend_pid())`.execute(tx);
  });

  await t.rejects(terminated, /terminat/);
  t.equal(
    (await sql<{ one: number }>`SELECT 1 AS one`.execute(db)).rows[0].one,
    1,
    'the pool goes on with a new connection',
  );
});
