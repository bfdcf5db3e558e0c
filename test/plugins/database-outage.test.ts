import { createServer, type AddressInfo, type Socket } from 'node:net';
import { sql } from 'kysely';
import pg from 'pg';
import t from 'tap';
import { createDatabase, DatabaseUnavailableError, isDatabaseUnavailable } from '../../src/db/database.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import { createCustomer, startTestService, submitPhoto } from '../helpers/service.ts';

/** Makes the real PostgreSQL refuse the service's database and cut its open connections, or lets it back in. */
async function setDatabaseReachable(databaseUrl: string, reachable: boolean): Promise<void> {
  const name = new URL(databaseUrl).pathname.slice(1);
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS ${reachable}`);
    if (!reachable)
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
  } finally {
    await admin.end();
  }
}

t.test(
  'a database outage answers 503 with Retry-After, in the envelope and on the dashboard, and passes',
  async (t) => {
    const service = await startTestService(t, { worker: false });
    service.boss.on('error', () => {}); // the queue's own connections are cut too
    const customer = await createCustomer(service.db);
    const photo = await renderMeterPhoto();
    const dashboard = new DashboardClient(service.url);
    t.equal((await dashboard.signUp('outage@example.com')).status, 303);

    await setDatabaseReachable(service.databaseUrl, false);
    t.teardown(() => setDatabaseReachable(service.databaseUrl, true));
    for (const sync of [false, true]) {
      const refused = await submitPhoto(service, { key: customer.key, image: photo, sync });
      t.equal(refused.status, 503, `${sync ? 'sync' : 'async'} submission`);
      t.equal(refused.headers.get('retry-after'), '10');
      t.same(refused.body, { errors: { database: ['The database is unavailable. Try again shortly.'] } });
    }
    const page = await dashboard.get('/dashboard/usage');
    t.equal(page.status, 503, 'a dashboard page');
    t.equal(page.headers.get('retry-after'), '10');
    t.match(page.text, 'cannot reach its database');
    t.equal((await fetch(`${service.url}/readyz`)).status, 503);

    await setDatabaseReachable(service.databaseUrl, true);
    t.equal(
      (await submitPhoto(service, { key: customer.key, image: photo })).status,
      202,
      'accepted again once the database is back',
    );
    t.equal((await dashboard.get('/dashboard/usage')).status, 200);
  },
);

t.test(
  'a database server that accepts connections but never answers is unavailable after the connect timeout, not a hang',
  async (t) => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    t.teardown(() => {
      for (const socket of sockets) socket.destroy();
      silent.close();
    });
    const db = createDatabase(`postgres://postgres@127.0.0.1:${(silent.address() as AddressInfo).port}/silent`, 1, 200);
    t.teardown(() => db.destroy());
    const error = await sql`SELECT 1`.execute(db).catch((caught: unknown) => caught);
    t.type(error, DatabaseUnavailableError);
    t.ok(isDatabaseUnavailable(error));
  },
);
