import t from 'tap';
import { checkImageHeader } from '../../src/images.ts';
import { sweepOrphanPhotos } from '../../src/photos/sweep.ts';
import { persistAndEnqueue } from '../../src/pipeline/persist-and-enqueue.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { startTestBucket } from '../helpers/bucket.ts';
import { createCustomer, startTestService, submitPhoto, waitForMeter } from '../helpers/service.ts';

t.test('the orphan sweep deletes old objects no row points at, and nothing else', async (t) => {
  const bucket = await startTestBucket(t);
  const service = await startTestService(t, { env: bucket.env });
  const customer = await createCustomer(service.db);
  const photo = await renderMeterPhoto();

  const accepted = await submitPhoto(service, { key: customer.key, image: photo });
  t.equal((await waitForMeter(service.db, accepted.body.reference_id)).status, 'completed');
  const kept = `s3://meterlens-photos/photos/${accepted.body.reference_id}/upright.jpg`;

  // A submission whose transaction rolls back after its upload was stored: its account is gone.
  const image = await checkImageHeader(photo, { maxPixels: service.config.maxImagePixels });
  const key = { keyId: customer.keyId, accountId: '999999999', subscription: undefined, monthlyUsage: 0 };
  await t.rejects(
    persistAndEnqueue(service, { key, plan: { planCode: 'test', monthlyRequestLimit: 10 }, image, mode: 'async' }),
    /foreign key/,
  );
  const objects = await bucket.objects();
  t.equal(objects.length, 2, 'the rolled-back upload is in the bucket');
  const rolledBack = objects.find((object) => object !== kept)!;
  t.match(rolledBack, /^s3:\/\/meterlens-photos\/photos\/[0-9a-f-]{36}\/upload$/);

  t.equal(await sweepOrphanPhotos(service), 0, 'younger than an hour: its transaction may still commit');
  t.same(await bucket.objects(), [kept, rolledBack].sort());
  t.equal(await sweepOrphanPhotos(service, 0), 1);
  t.same(await bucket.objects(), [kept], "the meter's photo stays");

  // A deleted account's meters go by cascade; their objects are left to the sweep.
  const other = await createCustomer(service.db);
  const gone = await submitPhoto(service, { key: other.key, image: photo });
  t.equal((await waitForMeter(service.db, gone.body.reference_id)).status, 'completed');
  await service.db.deleteFrom('accounts').where('id', '=', other.accountId).execute();
  t.equal(await sweepOrphanPhotos(service, 0), 1);
  t.same(await bucket.objects(), [kept]);
});

t.test('with PHOTO_STORE=database there is nothing to sweep', async (t) => {
  const service = await startTestService(t);
  t.equal(await sweepOrphanPhotos(service, 0), 0);
});
