import t from 'tap';
import { pgConnectionOptions } from '../../src/db/connect.ts';

const HEROKU = 'postgres://user:secret@ec2-1-2-3-4.compute-1.amazonaws.com:5432/d1abc';

t.test('sslmode=require (Heroku Postgres) encrypts without verifying the certificate', async (t) => {
  t.same(pgConnectionOptions(`${HEROKU}?sslmode=require`, {}), {
    connectionString: HEROKU,
    ssl: { rejectUnauthorized: false },
  });
  t.same(pgConnectionOptions(`${HEROKU}?sslmode=no-verify`, {}).ssl, { rejectUnauthorized: false });
});

t.test('PGSSLMODE applies when the URL has no sslmode; the URL wins when it has one', async (t) => {
  t.same(pgConnectionOptions(HEROKU, { PGSSLMODE: 'no-verify' }), {
    connectionString: HEROKU,
    ssl: { rejectUnauthorized: false },
  });
  t.same(pgConnectionOptions(`${HEROKU}?sslmode=disable`, { PGSSLMODE: 'require' }).ssl, false);
});

t.test('verify-full checks the certificate and the host; other parameters stay in the URL', async (t) => {
  const options = pgConnectionOptions(`${HEROKU}?application_name=web&sslmode=verify-full`, {});
  t.same(options, { connectionString: `${HEROKU}?application_name=web`, ssl: { rejectUnauthorized: true } });
  const verifyCa = pgConnectionOptions(`${HEROKU}?sslmode=verify-ca`, {}).ssl;
  t.match(verifyCa, { rejectUnauthorized: true, checkServerIdentity: Function });
});

t.test('no sslmode: a plain connection, as to the embedded or a local PostgreSQL', async (t) => {
  t.same(pgConnectionOptions('postgres://postgres@127.0.0.1:5432/test', {}), {
    connectionString: 'postgres://postgres@127.0.0.1:5432/test',
    ssl: false,
  });
});
