import t from 'tap';
import { loadConfig } from '../../src/config.ts';
import { loadJpeg, loadPhoto } from '../../src/photos/meter-photos.ts';
import { migratePhotos, type MigrateProgress } from '../../src/photos/migrate.ts';
import { PhotoStore } from '../../src/photos/store.ts';
import { startWorker } from '../../src/worker.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { startTestBucket } from '../helpers/bucket.ts';
import { createCustomer, startTestService, submitPhoto, waitForMeter, type TestService } from '../helpers/service.ts';

const photo = await renderMeterPhoto();

async function places(service: TestService) {
  return service.db
    .selectFrom('submission_photos')
    .select(['submission_id', 'upload', 'upload_object', 'jpeg', 'jpeg_object'])
    .orderBy('submission_id')
    .execute();
}

t.test('photos move to the bucket and back in batches, resumably, while the service runs', async (t) => {
  const bucket = await startTestBucket(t);
  const service = await startTestService(t, { env: { ...bucket.env, PHOTO_STORE: 'database' } });
  const customer = await createCustomer(service.db);
  for (let i = 0; i < 5; i++) {
    const accepted = await submitPhoto(service, { key: customer.key, image: photo });
    t.equal((await waitForMeter(service.db, accepted.body.reference_id)).status, 'completed');
  }
  const before = await places(service);
  t.equal(before.length, 5);
  const toBucket = { db: service.db, photos: new PhotoStore(loadConfig(bucket.env).photoStore) };

  // Stopped after its first batch (as by Ctrl-C), then run again.
  const seen: MigrateProgress[] = [];
  await t.rejects(
    migratePhotos(toBucket, 2, (progress) => {
      seen.push(progress);
      throw new Error('interrupted');
    }),
    /interrupted/,
  );
  t.same(seen, [{ moved: 2, left: 3 }]);
  const resumed: MigrateProgress[] = [];
  t.same(
    await migratePhotos(toBucket, 2, (progress) => {
      resumed.push(progress);
    }),
    { moved: 3, left: 0 },
  );
  t.same(resumed, [
    { moved: 2, left: 1 },
    { moved: 3, left: 0 },
  ]);

  const moved = await places(service);
  t.ok(
    moved.every((row) => row.jpeg === null && row.jpeg_object?.startsWith('s3://meterlens-photos/photos/')),
    'every row points at its object',
  );
  t.equal((await bucket.objects()).length, 5);
  for (const row of before) t.same(await loadJpeg(toBucket, row.submission_id), row.jpeg, 'the same bytes');
  t.same(await migratePhotos(toBucket, 2, () => {}), { moved: 0, left: 0 }, 'nothing left to move');

  const shown = await loadJpeg(service, before[0]!.submission_id);
  t.same(shown, before[0]!.jpeg, 'a service still set to the database reads a photo wherever its row says');

  t.same(await migratePhotos(service, 10, () => {}), { moved: 5, left: 0 }, 'and back');
  t.same(await places(service), before);
  t.same(await bucket.objects(), [], 'the objects are deleted once their rows hold the bytes again');
});

t.test('an upload still queued moves too, and the worker reads it from where it went', async (t) => {
  const bucket = await startTestBucket(t);
  const service = await startTestService(t, { env: { ...bucket.env, PHOTO_STORE: 'database' }, worker: false });
  const customer = await createCustomer(service.db);
  const accepted = await submitPhoto(service, { key: customer.key, image: photo });
  const toBucket = { db: service.db, photos: new PhotoStore(loadConfig(bucket.env).photoStore) };
  t.same(await migratePhotos(toBucket, 20, () => {}), { moved: 1, left: 0 });
  const [row] = await places(service);
  t.equal(row?.upload, null);
  t.equal(row?.upload_object, `s3://meterlens-photos/photos/${accepted.body.reference_id}/upload`);
  t.same((await loadPhoto(toBucket, row!.submission_id))?.upload, photo);

  await startWorker(service);
  t.equal((await waitForMeter(service.db, accepted.body.reference_id)).status, 'completed');
  const [read] = await places(service);
  t.equal(read?.upload_object, null);
  t.ok(read?.jpeg, 'the upright JPEG went where this service puts photos');
  t.same(await bucket.objects(), [], "the upload's object went once the JPEG replaced it");
});

t.test('the bucket going down stops the move; what moved stays moved, the rest stays put', async (t) => {
  const bucket = await startTestBucket(t);
  const service = await startTestService(t, { env: { ...bucket.env, PHOTO_STORE: 'database' } });
  const customer = await createCustomer(service.db);
  for (let i = 0; i < 3; i++) {
    const accepted = await submitPhoto(service, { key: customer.key, image: photo });
    await waitForMeter(service.db, accepted.body.reference_id);
  }
  const toBucket = { db: service.db, photos: new PhotoStore(loadConfig(bucket.env).photoStore) };
  await t.rejects(
    migratePhotos(toBucket, 1, () => bucket.stop()),
    /The photo store is unavailable/,
  );
  const rows = await places(service);
  t.same(
    rows.map((row) => row.jpeg_object === null),
    [false, true, true],
  );
  t.ok(
    rows.every((row) => (row.jpeg === null) !== (row.jpeg_object === null)),
    'each photo in exactly one place',
  );
  await bucket.start();
  t.same(await migratePhotos(toBucket, 1, () => {}), { moved: 2, left: 0 });
});
