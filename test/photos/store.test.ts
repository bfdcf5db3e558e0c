import { sql } from 'kysely';
import t from 'tap';
import { exportDataset } from '../../src/meters/dataset-export.ts';
import { sweepOrphanPhotos } from '../../src/photos/sweep.ts';
import { monthlyUsage } from '../../src/pipeline/check-usage.ts';
import { QUEUES, READ_RETRY_LIMIT } from '../../src/queue.ts';
import { startWorker } from '../../src/worker.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { startTestBucket } from '../helpers/bucket.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import {
  createCustomer,
  startTestService,
  submitPhoto,
  waitFor,
  waitForMeter,
  type TestService,
} from '../helpers/service.ts';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

const photo = await renderMeterPhoto();

function imageRow(service: TestService, referenceId: string) {
  return service.db
    .selectFrom('submission_photos as i')
    .innerJoin('submissions as m', 'm.id', 'i.submission_id')
    .select(['i.upload', 'i.upload_object', 'i.jpeg', 'i.jpeg_object'])
    .where('m.reference_id', '=', referenceId)
    .executeTakeFirst();
}

/** A dashboard user of a new account, and an API key of that account. */
async function dashboardCustomer(service: TestService): Promise<{ client: DashboardClient; key: string }> {
  const client = new DashboardClient(service.url);
  const signedUp = await client.signUp(`photos.${process.pid}.${Date.now()}@example.com`);
  t.equal(signedUp.status, 303);
  await client.get('/dashboard/keys');
  const created = await client.post('/dashboard/keys', { project_name: 'photos', status: 'active' });
  const key = /<code id="secret-value" class="secret">(meterlens_live_[0-9a-f]{32})<\/code>/.exec(created.text)?.[1];
  if (!key) throw new Error('no key on the page');
  return { client, key };
}

t.test('PHOTO_STORE=s3://…: every photo goes through the bucket', async (t) => {
  const bucket = await startTestBucket(t);
  const service = await startTestService(t, { env: bucket.env });
  const { client, key } = await dashboardCustomer(service);

  t.test('async: the upload is in the bucket when the row commits; the upright JPEG replaces it', async (t) => {
    const accepted = await submitPhoto(service, { key, image: photo });
    t.equal(accepted.status, 202);
    const referenceId = accepted.body.reference_id;
    const meter = await waitForMeter(service.db, referenceId);
    t.equal(meter.status, 'completed', meter.error_message ?? '');
    const row = await imageRow(service, referenceId);
    t.same(row, {
      upload: null,
      upload_object: null,
      jpeg: null,
      jpeg_object: `s3://meterlens-photos/photos/${referenceId}/upright.jpg`,
    });
    t.same(
      await bucket.objects(),
      [`s3://meterlens-photos/photos/${referenceId}/upright.jpg`],
      'the upload object was deleted',
    );

    const shown = await client.get(`/dashboard/readings/${referenceId}/photo`);
    t.equal(shown.status, 200, 'the dashboard shows it through the service');
    t.same([...shown.bytes.subarray(0, 2)], [0xff, 0xd8], 'a JPEG');
  });

  t.test('sync: read at once, its JPEG in the bucket', async (t) => {
    const read = await submitPhoto(service, { key, image: photo, sync: true });
    t.equal(read.status, 200);
    t.equal(read.body.reading, '02390.276');
    const row = await imageRow(service, read.body.reference_id);
    t.equal(row?.jpeg_object, `s3://meterlens-photos/photos/${read.body.reference_id}/upright.jpg`);
    t.equal(row?.jpeg, null);
  });

  t.test('the dataset export reads the JPEGs from the bucket', async (t) => {
    const read = await submitPhoto(service, { key, image: photo, sync: true });
    await service.db
      .insertInto('reading_corrections')
      .values((eb) => ({
        submission_id: eb.selectFrom('submissions').select('id').where('reference_id', '=', read.body.reference_id),
        reading: '02390.277',
        value: '2390.277',
        api_key_id: null,
        user_id: null,
        corrected_by: 'test',
      }))
      .execute();
    const dir = await mkdtemp(path.join(tmpdir(), 'meterlens-export-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const exported = await exportDataset(service, dir);
    t.same(
      exported.map((entry) => entry.file),
      [`${read.body.reference_id}.jpg`],
    );
    t.ok((await readdir(dir)).includes(`${read.body.reference_id}.jpg`));
  });

  t.test('an outage: 503 with Retry-After and no meter; a queued job waits for the bucket', async (t) => {
    const meters = async () =>
      Number((await sql<{ n: string }>`SELECT count(*) AS n FROM submissions`.execute(service.db)).rows[0]!.n);
    const before = await meters();
    await bucket.stop();
    t.teardown(() => bucket.start().catch(() => {}));
    for (const sync of [false, true]) {
      const refused = await submitPhoto(service, { key, image: photo, sync });
      t.equal(refused.status, 503, sync ? 'sync' : 'async');
      t.equal(refused.headers.get('retry-after'), '10');
      t.same(refused.body, { errors: { photos: ['The photo store is unavailable. Try again shortly.'] } });
    }
    t.equal(await meters(), before, 'no meter without its photo');
    await bucket.start();
  });

  t.test(
    "the bucket refuses a sync submission's upright JPEG after storing its upload: neither stored nor counted, and the retry with its Idempotency-Key is read and counted once",
    async (t) => {
      const customer = await createCustomer(service.db, { monthlyLimit: 1 });
      const submissions = () =>
        service.db
          .selectFrom('submissions')
          .select('reference_id')
          .where('account_id', '=', customer.accountId)
          .execute();
      const usage = () => monthlyUsage(service.db, customer.accountId);
      const send = () =>
        submitPhoto(service, {
          key: customer.key,
          image: photo,
          sync: true,
          headers: { 'idempotency-key': 'photo-1' },
        });
      const uploadsBefore = (await bucket.objects()).filter((object) => object.endsWith('/upload'));
      bucket.refusePuts(/\/upright\.jpg$/);
      t.teardown(() => bucket.refusePuts(null));

      const refused = await send();
      t.equal(refused.status, 503);
      t.equal(refused.headers.get('retry-after'), '10');
      t.same(
        refused.body,
        { errors: { photos: ['The photo store is unavailable. Try again shortly.'] } },
        'the answer of a bucket that refused the upload',
      );
      const uploads = (await bucket.objects()).filter((object) => object.endsWith('/upload'));
      t.equal(uploads.length, uploadsBefore.length + 1, 'its upload was stored before the bucket refused');
      t.same(await submissions(), [], 'no submission kept');
      t.equal(await usage(), 0, 'nothing counted');

      bucket.refusePuts(null);
      const read = await send();
      t.equal(read.status, 200, 'the retry is read, within a limit of 1');
      t.equal(read.headers.get('idempotent-replayed'), null, 'not a replay');
      t.equal(read.body.reading, '02390.276');
      t.equal(await usage(), 1, 'counted once');
      const replayed = await send();
      t.equal(replayed.headers.get('idempotent-replayed'), 'true');
      t.equal(replayed.body.reference_id, read.body.reference_id);
      t.same(
        (await submissions()).map((row) => row.reference_id),
        [read.body.reference_id],
        'one submission',
      );
      t.equal(await usage(), 1, 'still once');

      const swept = await sweepOrphanPhotos(service, 0);
      t.ok(swept >= 1, 'the sweep deletes the withdrawn upload');
      t.notOk(
        (await bucket.objects()).some((object) => uploads.includes(object) && !uploadsBefore.includes(object)),
        'it is gone',
      );
    },
  );

  t.test(
    'the bucket stops while a job is queued: the read waits for it past the job retries, and is not failed',
    async (t) => {
      const queued = await startTestService(t, {
        env: { ...bucket.env, READ_RETRY_DELAY_SECONDS: '1' },
        worker: false,
      });
      const customer = await createCustomer(queued.db);
      const accepted = await submitPhoto(queued, { key: customer.key, image: photo });
      t.equal(accepted.status, 202);
      await bucket.stop();
      await startWorker(queued);
      const tries = READ_RETRY_LIMIT + 2;
      const waited = await waitFor(
        () =>
          sql<{ n: number }>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = ${QUEUES.readMeter}`.execute(
            queued.db,
          ),
        (result) => result.rows[0]!.n >= tries,
      );
      t.ok(waited.rows[0]!.n >= tries, `tried ${tries} times, more than a job's retries`);
      const waiting = await queued.db
        .selectFrom('submissions')
        .select('status')
        .where('reference_id', '=', accepted.body.reference_id)
        .executeTakeFirstOrThrow();
      t.equal(waiting.status, 'processing', 'not failed while the bucket is down');
      const dashboardWhileDown = await client.get('/dashboard/readings/00000000-0000-4000-8000-000000000000/photo');
      t.equal(dashboardWhileDown.status, 404, 'a photo nobody has needs no bucket');
      await bucket.start();
      const meter = await waitForMeter(queued.db, accepted.body.reference_id);
      t.equal(meter.status, 'completed', meter.error_message ?? '');
    },
  );

  t.test('the dashboard answers 503 when the bucket is down, with Retry-After', async (t) => {
    const read = await submitPhoto(service, { key, image: photo, sync: true });
    await bucket.stop();
    t.teardown(() => bucket.start().catch(() => {}));
    const shown = await client.get(`/dashboard/readings/${read.body.reference_id}/photo`);
    t.equal(shown.status, 503);
    t.equal(shown.headers.get('retry-after'), '10');
    await bucket.start();
    t.equal((await client.get(`/dashboard/readings/${read.body.reference_id}/photo`)).status, 200);
  });
});

t.test('PHOTO_STORE=database (the default): the photo stays in the row and no bucket is asked', async (t) => {
  const service = await startTestService(t);
  const customer = await createCustomer(service.db);
  const accepted = await submitPhoto(service, { key: customer.key, image: photo });
  const meter = await waitForMeter(service.db, accepted.body.reference_id);
  t.equal(meter.status, 'completed');
  const row = await imageRow(service, accepted.body.reference_id);
  t.equal(row?.jpeg_object, null);
  t.same([...row!.jpeg!.subarray(0, 2)], [0xff, 0xd8]);
});
