import t from 'tap';
import { startTestBucket } from '../helpers/bucket.ts';
import { startCli } from '../helpers/cli.ts';
import { createCustomer } from '../helpers/service.ts';

const { db, meterlens } = await startCli(t);

t.test('photos migrate --help, and the target must be PHOTO_STORE', async (t) => {
  const help = await meterlens(['photos', 'migrate', '--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, 'usage: meterlens photos migrate --to s3|database [--batch N]');
  const listed = await meterlens(['help']);
  t.match(listed.stdout, 'meterlens photos migrate');

  const notSet = await meterlens(['photos', 'migrate', '--to', 's3']);
  t.equal(notSet.code, 2);
  t.match(notSet.stderr, '--to s3 needs PHOTO_STORE=s3://bucket/prefix (now database), here and for the service');
  const unknown = await meterlens(['photos', 'migrate', '--to', 'ftp']);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, '--to must be one of s3, database, got "ftp"');
  const badBatch = await meterlens(['photos', 'migrate', '--to', 'database', '--batch', '0']);
  t.equal(badBatch.code, 2);
  t.match(badBatch.stderr, '--batch must be an integer of at least 1');
});

t.test('photos migrate --to s3 moves the photos and prints its progress', async (t) => {
  const bucket = await startTestBucket(t);
  const customer = await createCustomer(db);
  for (let i = 0; i < 3; i++) {
    const meter = await db
      .insertInto('submissions')
      .values({
        account_id: customer.accountId,
        api_key_id: customer.keyId,
        mode: 'async',
        error_code: null,
        error_message: null,
        started_at: null,
        finished_at: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await db
      .insertInto('submission_photos')
      .values({ submission_id: meter.id, original_format: 'jpeg', original_bytes: 3, upload: Buffer.from([1, 2, 3]) })
      .execute();
  }
  const run = await meterlens(['photos', 'migrate', '--to', 's3', '--batch', '2', '--json'], bucket.env);
  t.equal(run.code, 0, run.stderr);
  t.same(
    run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line)),
    [
      { moved: 2, left: 1 },
      { moved: 3, left: 0 },
      { moved: 3, left: 0, done: true },
    ],
  );
  t.equal((await bucket.objects()).length, 3);
  const back = await meterlens(['photos', 'migrate', '--to', 'database'], { ...bucket.env, PHOTO_STORE: 'database' });
  t.equal(back.code, 0, back.stderr);
  t.match(back.stdout, 'done: 3 photos moved to database');
  t.same(await bucket.objects(), []);
});
