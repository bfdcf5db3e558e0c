import { sql } from 'kysely';
import t from 'tap';
import { loadConfig } from '../src/config.ts';
import { createDatabase } from '../src/db/database.ts';
import { sweepOrphanPhotos } from '../src/photos/sweep.ts';
import { PhotoStore, type PhotoPlace } from '../src/photos/store.ts';
import { startTestBucket } from './helpers/bucket.ts';
import { createBoss, ensureQueues, QUEUES } from '../src/queue.ts';
import { purgeOldData } from '../src/retention.ts';
import { newWebhookSecret } from '../src/webhooks/signature.ts';
import { createTestDatabase } from './helpers/database.ts';
import { createCustomer } from './helpers/service.ts';

const database = await createTestDatabase();
t.teardown(database.drop);
const db = createDatabase(database.url);
t.teardown(() => db.destroy());
const photoDeps = { db, photos: new PhotoStore(loadConfig({}).photoStore) };

const { accountId, keyId: apiKeyId } = await createCustomer(db);
const endpointId = (
  await db
    .insertInto('webhook_endpoints')
    .values({
      account_id: accountId,
      url: 'http://127.0.0.1:9/hook',
      secret: newWebhookSecret(),
      disabled_reason: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
).id;

/** A finished meter with its photo and reading, submitted `daysAgo` days ago. */
async function meterSubmitted(
  daysAgo: number,
  status: 'completed' | 'pending' = 'completed',
  photo: PhotoPlace = { bytes: Buffer.from([1, 2, 3]), object: null },
) {
  const createdAt = sql<Date>`now() - make_interval(days => ${daysAgo})`;
  const meter = await db
    .insertInto('submissions')
    .values({
      account_id: accountId,
      api_key_id: apiKeyId,
      mode: 'async',
      status,
      error_code: null,
      error_message: null,
      started_at: null,
      finished_at: null,
      created_at: createdAt,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('submission_photos')
    .values({
      submission_id: meter.id,
      original_format: 'jpeg',
      original_bytes: 3,
      width: 1,
      height: 1,
      jpeg: photo.bytes,
      jpeg_object: photo.object,
    })
    .execute();
  if (status === 'completed') {
    await db
      .insertInto('readings')
      .values({
        submission_id: meter.id,
        reading: '1',
        value: 1,
        confidence: 90,
        reader: 'local',
        model: 'm',
        escalated: false,
        digit_confidences: null,
        counter_box: null,
        attempts: '[]',
        read_ms: 1,
        raw_answer: null,
      })
      .execute();
  }
  return meter.id;
}

async function deliveryCreated(daysAgo: number, status: 'delivered' | 'failed' | 'pending') {
  const delivery = await db
    .insertInto('webhook_deliveries')
    .values({
      event_id: `msg_${Math.random().toString(16).slice(2)}`,
      endpoint_id: endpointId,
      account_id: accountId,
      submission_id: null,
      event_type: 'reading.completed',
      payload: '{}',
      status,
      last_status_code: null,
      last_error: null,
      next_attempt_at: null,
      delivered_at: null,
      created_at: sql<Date>`now() - make_interval(days => ${daysAgo})`,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('webhook_attempts')
    .values({
      delivery_id: delivery.id,
      attempt: 1,
      started_at: new Date(),
      duration_ms: 5,
      status_code: 204,
      error: null,
    })
    .execute();
  return delivery.id;
}

const hasImage = async (meterId: string) =>
  Boolean(
    await db
      .selectFrom('submission_photos')
      .select('submission_id')
      .where('submission_id', '=', meterId)
      .executeTakeFirst(),
  );

t.test('photos past IMAGE_RETENTION_DAYS are deleted in batches; meters and readings stay', async (t) => {
  const old = [];
  for (let i = 0; i < 450; i++) old.push(await meterSubmitted(91));
  const stillPending = await meterSubmitted(91, 'pending');
  const young = await meterSubmitted(89);

  const purged = await purgeOldData(photoDeps, { imageRetentionDays: 90, webhookRetentionDays: 0 });
  t.equal(purged.images, 450, 'three batches of at most 200');
  t.notOk(await hasImage(old[0]));
  t.notOk(await hasImage(old[449]));
  t.ok(await hasImage(young), 'a younger photo stays');
  t.ok(await hasImage(stillPending), 'an unfinished meter keeps its photo');
  const meter = await db
    .selectFrom('submissions')
    .select(['status', 'image_removed_at'])
    .where('id', '=', old[0])
    .executeTakeFirstOrThrow();
  t.equal(meter.status, 'completed');
  t.ok(meter.image_removed_at instanceof Date, 'the meter says when its photo went');
  t.ok(
    await db.selectFrom('readings').select('id').where('submission_id', '=', old[0]).executeTakeFirst(),
    'the reading stays',
  );

  t.same(
    await purgeOldData(photoDeps, { imageRetentionDays: 90, webhookRetentionDays: 0 }),
    { images: 0, deliveries: 0 },
    'nothing more to do',
  );
  t.same(
    await purgeOldData(photoDeps, { imageRetentionDays: 0, webhookRetentionDays: 0 }),
    { images: 0, deliveries: 0 },
    '0 keeps forever',
  );
  t.ok(await hasImage(young));
});

t.test(
  'in a bucket: retention deletes the row and its object; an outage between them leaves the object to the sweep',
  async (t) => {
    const bucket = await startTestBucket(t);
    const inBucket = { db, photos: new PhotoStore(loadConfig(bucket.env).photoStore) };
    const expired = await meterSubmitted(
      91,
      'completed',
      await inBucket.photos.put('expired/upright.jpg', Buffer.from('old')),
    );
    const kept = await inBucket.photos.put('kept/upright.jpg', Buffer.from('young'));
    await meterSubmitted(89, 'completed', kept);

    t.equal((await purgeOldData(inBucket, { imageRetentionDays: 90, webhookRetentionDays: 0 })).images, 1);
    t.notOk(await hasImage(expired));
    t.same(await bucket.objects(), [kept.object], "the expired photo's object went with its row");

    const failing = await meterSubmitted(
      91,
      'completed',
      await inBucket.photos.put('during-outage/upright.jpg', Buffer.from('old')),
    );
    await bucket.stop();
    await t.rejects(
      purgeOldData(inBucket, { imageRetentionDays: 90, webhookRetentionDays: 0 }),
      /The photo store is unavailable/,
    );
    t.notOk(await hasImage(failing), 'the row went first: no photo is shown whose object is gone');
    await bucket.start();
    t.same(
      await bucket.objects(),
      [kept.object, 's3://meterlens-photos/photos/during-outage/upright.jpg'].sort(),
      'its object outlived it',
    );
    t.equal(await sweepOrphanPhotos(inBucket, 0), 1, 'until the sweep');
    t.same(await bucket.objects(), [kept.object]);
  },
);

t.test('finished webhook deliveries past WEBHOOK_RETENTION_DAYS go with their attempts', async (t) => {
  const oldDelivered = await deliveryCreated(31, 'delivered');
  const oldFailed = await deliveryCreated(31, 'failed');
  const oldPending = await deliveryCreated(31, 'pending');
  const recent = await deliveryCreated(29, 'delivered');
  const purged = await purgeOldData(photoDeps, { imageRetentionDays: 0, webhookRetentionDays: 30 });
  t.equal(purged.deliveries, 2);
  const left = await db.selectFrom('webhook_deliveries').select('id').orderBy('id').execute();
  t.same(
    left.map((row) => row.id),
    [oldPending, recent],
  );
  const attempts = await db
    .selectFrom('webhook_attempts')
    .select('delivery_id')
    .where('delivery_id', 'in', [oldDelivered, oldFailed])
    .execute();
  t.same(attempts, [], 'their attempts are gone too');
});

t.test('pg-boss keeps finished jobs FINISHED_JOB_RETENTION_DAYS, on every queue', async (t) => {
  const config = loadConfig({ FINISHED_JOB_RETENTION_DAYS: '2' });
  const boss = createBoss(database.url, config, { supervise: false });
  await boss.start();
  t.teardown(() => boss.stop({ graceful: false }));
  await ensureQueues(boss, config);
  // pg-boss's own internal queues (__pgboss__…) keep their settings.
  const queues = await sql<{ name: string; deletion_seconds: number }>`
    SELECT name, deletion_seconds FROM pgboss.queue WHERE NOT starts_with(name, '__pgboss__') ORDER BY name`.execute(
    db,
  );
  t.same(
    queues.rows.map((queue) => queue.name),
    Object.values(QUEUES).sort(),
  );
  t.same(new Set(queues.rows.map((queue) => queue.deletion_seconds)), new Set([2 * 86_400]));
});
