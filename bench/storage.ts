/**
 * Bytes one reading costs in PostgreSQL: real photos from ../shared/datasets go through the real
 * steps (normalise, persist-and-enqueue, the local reader, record and notify, one webhook
 * attempt) into a database of their own, then each table's size is divided by the photos.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/storage.ts [photos per dataset, default 50]
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import sharp from 'sharp';
import { createAccount } from '../src/accounts/accounts.ts';
import { loadConfig } from '../src/config.ts';
import { createDatabase } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { checkImageHeader, normaliseImage } from '../src/images.ts';
import { normaliseUpload } from '../src/pipeline/normalise.ts';
import { readContext } from '../src/pipeline/expect-reading.ts';
import { persistAndEnqueue } from '../src/pipeline/persist-and-enqueue.ts';
import { recordReading } from '../src/pipeline/record.ts';
import { createBoss, ensureQueues } from '../src/queue.ts';
import { createReaderChain } from '../src/readers/registry.ts';
import { deliverWebhook } from '../src/webhooks/deliver.ts';
import { newWebhookSecret } from '../src/webhooks/signature.ts';
import { PhotoStore } from '../src/photos/store.ts';
import { datasetPhotos, newDatabase, SHARED_DATASETS, tableSizes } from './harness.ts';

const perDataset = Number(process.argv[2] ?? 50);
const adminUrl = process.env.DATABASE_URL;
const photos = [...(await datasetPhotos('toloka', perDataset)), ...(await datasetPhotos('bdci2020', perDataset))];
if (photos.length === 0 || !adminUrl) {
  console.log(`# skipped: needs ${SHARED_DATASETS} and DATABASE_URL`);
  process.exit(0);
}

const { url, drop } = await newDatabase(adminUrl);
const receiver = createServer((request, response) => request.resume().on('end', () => response.writeHead(204).end()));
receiver.listen(0, '127.0.0.1');
await once(receiver, 'listening');

const config = loadConfig({ READER_CHAIN: 'local', WEBHOOK_ALLOW_PRIVATE: '1' });
await migrate(url);
const db = createDatabase(url);
const boss = createBoss(url, config, { supervise: false });
try {
  await boss.start();
  await ensureQueues(boss, config);
  const readers = await createReaderChain(config);
  const account = await createAccount(db, { name: 'Storage bench', planCode: 'scale' });
  const keyId = (
    await db
      .insertInto('api_keys')
      .values({
        account_id: account.id,
        project_name: 'bench',
        key_sha256: '0'.repeat(64),
        display_prefix: 'x',
        display_suffix: 'x',
      })
      .returning('id')
      .executeTakeFirstOrThrow()
  ).id;
  const port = (receiver.address() as AddressInfo).port;
  await db
    .insertInto('webhook_endpoints')
    .values({
      account_id: account.id,
      url: `http://127.0.0.1:${port}/hook`,
      secret: newWebhookSecret(),
      disabled_reason: null,
    })
    .execute();

  const photoStore = new PhotoStore(config.photoStore);
  let uploadBytes = 0;
  let fullSizeJpegBytes = 0;
  for (const file of photos) {
    const upload = readFileSync(file);
    uploadBytes += upload.length;
    // A phone's 12 MP upload is stored at NORMALISED_LONG_SIDE; the dataset's are ≤1024 px and
    // are not enlarged. Enlarged here they are smoother than a real photo: a lower bound.
    const enlarged = await sharp(upload)
      .resize({ width: 4032, height: 4032, fit: 'inside' })
      .jpeg({ quality: 90 })
      .toBuffer();
    fullSizeJpegBytes += (
      await normaliseImage(enlarged, { maxPixels: config.maxImagePixels, longSide: config.normalisedLongSide })
    ).jpeg.length;
    const image = await checkImageHeader(upload, { maxPixels: config.maxImagePixels });
    const plan = { planCode: 'scale', monthlyRequestLimit: 100_000 };
    const key = { keyId, accountId: account.id, subscription: undefined, monthlyUsage: 0 };
    const accepted = await persistAndEnqueue({ db, photos: photoStore, boss }, { key, plan, image, mode: 'async' });
    const meter = { ...accepted, accountId: account.id, mode: 'async' as const };
    try {
      const jpeg = await normaliseUpload({ db, photos: photoStore, config }, accepted.submissionId, image.upload);
      await recordReading(
        { db, boss, config },
        meter,
        await readers.read(jpeg),
        await readContext(db, accepted.submissionId),
      );
    } catch {
      // An unreadable photo costs no reading row; the failure is in the meter row.
    }
  }
  const deliveries = await db.selectFrom('webhook_deliveries').select('id').execute();
  for (const { id } of deliveries) await deliverWebhook({ db, boss, config }, id);

  await sql`VACUUM ANALYZE`.execute(db);
  const count = photos.length;
  const { rows: columns } = await sql<{ jpeg: number; readings: number }>`
    SELECT (SELECT avg(pg_column_size(jpeg)) FROM submission_photos)::float8 AS jpeg,
           (SELECT count(*) FROM readings)::int AS readings`.execute(db);
  const tables = await tableSizes(db);
  const { rows: jobs } = await sql<{ bytes: number }>`
    SELECT sum(pg_column_size(j.*))::float8 AS bytes FROM pgboss.job j`.execute(db);

  console.log(`# ${count} photos (${perDataset} toloka + ${perDataset} bdci2020), ${columns[0].readings} read`);
  console.log(`upload (dataset JPEG, ≤1024 px)          ${Math.round(uploadBytes / count)} B/photo`);
  console.log(`pg_column_size(submission_photos.jpeg)         ${Math.round(columns[0].jpeg)} B/photo`);
  console.log(`stored JPEG of a 12 MP upload (≥)         ${Math.round(fullSizeJpegBytes / count)} B/photo`);
  for (const table of ['submission_photos', 'submissions', 'readings', 'webhook_deliveries', 'webhook_attempts']) {
    const bytes = tables.get(`public.${table}`) ?? 0;
    console.log(`pg_total_relation_size(${table})`.padEnd(42) + `${Math.round(bytes / count)} B/photo`);
  }
  console.log(`pgboss.job rows (read + deliver jobs)     ${Math.round(jobs[0].bytes / count)} B/photo`);
} finally {
  await boss.stop({ graceful: false });
  await db.destroy();
  receiver.close();
  await drop();
}
