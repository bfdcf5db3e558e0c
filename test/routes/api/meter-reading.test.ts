import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import sharp from 'sharp';
import { sql } from 'kysely';
import { MAX_IMAGE_BYTES } from '../../../src/images.ts';
import { renderMeterPhoto } from '../../fakes/meter-photo.ts';
import { addWebhookEndpoint } from '../../../src/webhooks/endpoints.ts';
import { startWebhookReceiver } from '../../fakes/webhook-receiver.ts';
import { monthlyUsage } from '../../../src/pipeline/check-usage.ts';
import { expireStaleSubmissions } from '../../../src/pipeline/record.ts';
import { createCustomer, startTestService, submitPhoto, waitFor, waitForMeter } from '../../helpers/service.ts';

const INVALID_KEY = { errors: { authorization: ['Invalid or inactive API key'] } };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

t.test('meter-reading API', async (t) => {
  const service = await startTestService(t);
  const photo = await renderMeterPhoto();

  t.test('authentication: every bad Authorization header gets the same 422', async (t) => {
    const customer = await createCustomer(service.db);
    const inactive = await createCustomer(service.db, { keyStatus: 'inactive' });
    const deleted = await createCustomer(service.db);
    await service.db.updateTable('api_keys').set({ deleted_at: new Date() }).where('id', '=', deleted.keyId).execute();
    const cases: Array<[string, string | undefined]> = [
      ['missing header', undefined],
      ['empty header', ''],
      ['lowercase bearer', `bearer ${customer.key}`],
      ['two spaces', `Bearer  ${customer.key}`],
      ['trailing text', `Bearer ${customer.key} x`],
      ['no scheme', customer.key],
      ['malformed key', 'Bearer meterlens_live_XYZ'],
      ['unknown key', `Bearer meterlens_live_${'0'.repeat(32)}`],
      ['inactive key', `Bearer ${inactive.key}`],
      ['deleted key', `Bearer ${deleted.key}`],
    ];
    for (const [name, authorization] of cases) {
      for (const sync of [false, true]) {
        const response = await submitPhoto(service, { authorization: authorization ?? undefined, image: photo, sync });
        t.equal(response.status, 422, `${name} (${sync ? 'sync' : 'async'})`);
        t.same(response.body, INVALID_KEY, name);
      }
    }
    const accepted = await submitPhoto(service, { key: customer.key, image: photo });
    t.equal(accepted.status, 202, 'the valid key is accepted');
  });

  t.test('subscription: none, expired and cancelled are refused', async (t) => {
    for (const subscription of ['none', 'expired', 'cancelled'] as const) {
      const customer = await createCustomer(service.db, { subscription });
      const response = await submitPhoto(service, { key: customer.key, image: photo });
      t.equal(response.status, 422, subscription);
      t.same(Object.keys(response.body.errors), ['subscription'], subscription);
      t.match(
        response.body.errors.subscription[0],
        subscription === 'none' ? /No subscription/ : new RegExp(subscription, 'i'),
      );
    }
  });

  t.test('usage: the monthly limit holds exactly under 20 concurrent submissions', async (t) => {
    const customer = await createCustomer(service.db, { monthlyLimit: 3 });
    for (let i = 0; i < 2; i++) t.equal((await submitPhoto(service, { key: customer.key, image: photo })).status, 202);
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => submitPhoto(service, { key: customer.key, image: photo })),
    );
    const statuses = responses.map((response) => response.status);
    t.equal(statuses.filter((status) => status === 202).length, 1, 'exactly one of the 20 is accepted');
    t.equal(statuses.filter((status) => status === 422).length, 19);
    for (const response of responses.filter((response) => response.status === 422)) {
      t.match(response.body, { errors: { usage: [/Monthly request limit of 3 reached/] } });
    }
    const usage = await service.db
      .selectFrom('api_usage')
      .select('request_count')
      .where('account_id', '=', customer.accountId)
      .executeTakeFirstOrThrow();
    t.equal(usage.request_count, 3, 'rejected submissions are not counted');
    const meters = await service.db
      .selectFrom('submissions')
      .select(sql<number>`count(*)::int`.as('count'))
      .where('account_id', '=', customer.accountId)
      .executeTakeFirstOrThrow();
    t.equal(meters.count, 3, 'one meter per accepted submission');
  });

  t.test('usage counts accepted submissions whether they complete or their photo is unreadable', async (t) => {
    const customer = await createCustomer(service.db, { monthlyLimit: 2 });
    service.model.setBehaviour({ answer: { reading: '', confidence: 0, unobstructed: false } });
    t.teardown(() => service.model.setBehaviour({}));
    const failed = await submitPhoto(service, { key: customer.key, image: photo, sync: true });
    t.equal(failed.status, 422);
    service.model.setBehaviour({});
    t.equal((await submitPhoto(service, { key: customer.key, image: photo, sync: true })).status, 200);
    const refused = await submitPhoto(service, { key: customer.key, image: photo, sync: true });
    t.match(refused, { status: 422, body: { errors: { usage: [/limit of 2/] } } });
  });

  t.test('image: each problem is named, and nothing is accepted', async (t) => {
    const customer = await createCustomer(service.db);
    const cases: Array<[string, Parameters<typeof submitPhoto>[1], RegExp]> = [
      ['no file', { image: null }, /Missing the field "image"/],
      ['another field name', { image: photo, field: 'photo' }, /Unexpected file field "photo"/],
      ['empty file', { image: Buffer.alloc(0) }, /empty/],
      ['not an image', { image: Buffer.from('this is a text file, not a photo') }, /not an image/],
    ];
    for (const [name, options, message] of cases) {
      const response = await submitPhoto(service, { key: customer.key, ...options });
      t.equal(response.status, 422, name);
      t.match(response.body, { errors: { image: [message] } }, name);
      t.same(Object.keys(response.body.errors), ['image'], name);
    }
    const json = await fetch(`${service.url}/api/meter-reading`, {
      method: 'POST',
      headers: { authorization: `Bearer ${customer.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ image: 'x' }),
    });
    t.equal(json.status, 422, 'a JSON body is not an upload');
    t.match(await json.json(), { errors: { image: [/multipart\/form-data/] } });
    const meters = await service.db
      .selectFrom('submissions')
      .select('id')
      .where('account_id', '=', customer.accountId)
      .execute();
    t.equal(meters.length, 0, 'no meter was created');
  });

  t.test(
    'image: a photo whose header passes but whose pixels do not decode fails its meter as invalid_image',
    async (t) => {
      const customer = await createCustomer(service.db);
      const receiver = await startWebhookReceiver();
      t.teardown(() => receiver.close());
      await addWebhookEndpoint(service.db, service.config, { accountId: customer.accountId, url: receiver.url });
      const truncated = photo.subarray(0, Math.floor(photo.length / 2));
      const modelRequestsBefore = service.model.requests.length;

      const accepted = await submitPhoto(service, { key: customer.key, image: truncated });
      t.equal(accepted.status, 202, 'the ack checks only the header');
      t.match(await waitForMeter(service.db, accepted.body.reference_id), {
        status: 'failed',
        error_code: 'invalid_image',
      });
      const [webhook] = await receiver.waitFor(1);
      t.match(JSON.parse(webhook.body), {
        event: 'reading.failed',
        data: {
          reference_id: accepted.body.reference_id,
          error: { code: 'invalid_image', message: /could not be decoded/ },
        },
      });

      const sync = await submitPhoto(service, { key: customer.key, image: truncated, sync: true });
      t.equal(sync.status, 422);
      t.match(sync.body, { errors: { image: [/could not be decoded/] }, reference_id: UUID, status: 'failed' });
      t.match(await waitForMeter(service.db, sync.body.reference_id), {
        status: 'failed',
        error_code: 'invalid_image',
      });
      t.equal(service.model.requests.length, modelRequestsBefore, 'no reader was asked');
    },
  );

  t.test('image: one byte over 10 MB is refused every time', async (t) => {
    const customer = await createCustomer(service.db);
    const oversized = Buffer.concat([photo, Buffer.alloc(MAX_IMAGE_BYTES + 1 - photo.length, 0xff)]);
    t.equal(oversized.length, MAX_IMAGE_BYTES + 1);
    for (let attempt = 0; attempt < 10; attempt++) {
      const response = await submitPhoto(service, { key: customer.key, image: oversized });
      t.equal(response.status, 422, `attempt ${attempt + 1}`);
      t.match(response.body, { errors: { image: [/larger than 10 MB \(10485760 bytes\)/] } });
    }
  });

  t.test('image: more pixels than the limit is refused before decoding', async (t) => {
    const small = await startTestService(t, { env: { MAX_IMAGE_PIXELS: '10000' }, worker: false });
    const customer = await createCustomer(small.db);
    const big = await sharp({ create: { width: 200, height: 100, channels: 3, background: '#888' } })
      .png()
      .toBuffer();
    const response = await submitPhoto(small, { key: customer.key, image: big });
    t.equal(response.status, 422);
    t.match(response.body, { errors: { image: [/200×100 pixels .* the limit is 0\.0 MP/] } });
  });

  t.test('async: 202 with a reference, then the worker reads and records it', async (t) => {
    const customer = await createCustomer(service.db);
    const rotated = await sharp(photo).rotate(90).jpeg().withMetadata({ orientation: 8 }).toBuffer();
    const response = await submitPhoto(service, { key: customer.key, image: rotated });
    t.equal(response.status, 202);
    t.match(response.body, { reference_id: UUID, status: 'pending' });
    t.same(Object.keys(response.body).sort(), ['reference_id', 'status']);
    const meter = await waitForMeter(service.db, response.body.reference_id);
    t.equal(meter.status, 'completed');
    t.equal(meter.mode, 'async');
    const reading = await service.db
      .selectFrom('readings')
      .selectAll()
      .where('submission_id', '=', meter.id)
      .executeTakeFirstOrThrow();
    t.match(reading, { reading: '02390.276', value: '2390.276', confidence: 97, reader: 'openai', escalated: false });
    const image = await service.db
      .selectFrom('submission_photos')
      .selectAll()
      .where('submission_id', '=', meter.id)
      .executeTakeFirstOrThrow();
    t.equal(image.original_format, 'jpeg');
    t.ok(image.width! > image.height!, 'the stored image was turned upright from its EXIF orientation');
    t.equal(image.upload, null, 'the upload was replaced by the upright JPEG');
    const key = await service.db
      .selectFrom('api_keys')
      .select('last_used_at')
      .where('id', '=', customer.keyId)
      .executeTakeFirstOrThrow();
    t.ok(key.last_used_at, 'the key records its last use');
  });

  t.test('sync: 200 with the reading, and no webhook', async (t) => {
    const customer = await createCustomer(service.db);
    const response = await submitPhoto(service, { key: customer.key, image: photo, sync: true });
    t.equal(response.status, 200);
    t.match(response.body, {
      reference_id: UUID,
      status: 'completed',
      reading: '02390.276',
      value: 2390.276,
      confidence: 97,
      escalated: false,
      model: service.config.openai.model,
      reading_id: Number,
    });
    t.same(Object.keys(response.body).sort(), [
      'confidence',
      'escalated',
      'meter_id',
      'model',
      'needs_review',
      'plausibility',
      'reading',
      'reading_id',
      'reference_id',
      'status',
      'value',
      'whole_units_agreed',
    ]);
    t.equal(response.body.whole_units_agreed, false, "a hosted reader's whole units are never agreed");
    const meter = await waitForMeter(service.db, response.body.reference_id);
    const deliveries = await service.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('submission_id', '=', meter.id)
      .execute();
    t.equal(deliveries.length, 0);
  });

  t.test('sync: an unreadable photo is a 422 that names the failed meter', async (t) => {
    const customer = await createCustomer(service.db);
    service.model.setBehaviour({ answer: { reading: '', confidence: 5, unobstructed: false } });
    t.teardown(() => service.model.setBehaviour({}));
    const response = await submitPhoto(service, { key: customer.key, image: photo, sync: true });
    t.equal(response.status, 422);
    t.match(response.body, { errors: { image: [String] }, reference_id: UUID, status: 'failed' });
    const meter = await waitForMeter(service.db, response.body.reference_id);
    t.match(meter, { status: 'failed', error_code: 'unreadable' });
  });

  t.test('sync: every model unavailable is a 503 with Retry-After', async (t) => {
    const customer = await createCustomer(service.db);
    service.model.setBehaviour({ status: 503 });
    t.teardown(() => service.model.setBehaviour({}));
    const response = await submitPhoto(service, { key: customer.key, image: photo, sync: true });
    t.equal(response.status, 503);
    t.equal(response.headers.get('retry-after'), '30');
    t.match(response.body, {
      errors: { reader: [/No reader could be reached/] },
      reference_id: UUID,
      status: 'failed',
    });
    t.match(await waitForMeter(service.db, response.body.reference_id), {
      status: 'failed',
      error_code: 'readers_unavailable',
    });
  });

  t.test("sync: a failure of the service's own is not counted, and a retry with the same key is read", async (t) => {
    const customer = await createCustomer(service.db, { monthlyLimit: 1 });
    const retry = { key: customer.key, image: photo, sync: true, headers: { 'idempotency-key': 'photo-1' } };

    service.model.setBehaviour({ status: 503 });
    const unavailable = await submitPhoto(service, retry);
    t.equal(unavailable.status, 503, 'no reader reached');
    t.equal(await monthlyUsage(service.db, customer.accountId), 0, 'not counted');

    service.model.setBehaviour({});
    await sql`CREATE FUNCTION refuse_reading() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'disk full'; END $$`.execute(service.db);
    await sql`CREATE TRIGGER refuse_reading BEFORE INSERT ON readings
      FOR EACH ROW EXECUTE FUNCTION refuse_reading()`.execute(service.db);
    const dropTrigger = () => sql`DROP FUNCTION IF EXISTS refuse_reading() CASCADE`.execute(service.db);
    t.teardown(dropTrigger);
    const unexpected = await submitPhoto(service, retry);
    t.match(unexpected, { status: 500, body: { errors: { server: ['Internal server error'] } } });
    t.equal(await monthlyUsage(service.db, customer.accountId), 0, 'an unexpected error is not counted');

    await dropTrigger();
    const read = await submitPhoto(service, retry);
    t.match(read, { status: 200, body: { status: 'completed' } }, 'read, not replayed, within a limit of 1');
    t.equal(read.headers.get('idempotent-replayed'), null);
    t.equal(await monthlyUsage(service.db, customer.accountId), 1, 'counted once');
    const failed = await service.db
      .selectFrom('submissions')
      .select(['status', 'error_code'])
      .where('account_id', '=', customer.accountId)
      .orderBy('id')
      .execute();
    t.same(
      failed,
      [
        { status: 'failed', error_code: 'readers_unavailable' },
        { status: 'failed', error_code: 'internal_error' },
        { status: 'completed', error_code: null },
      ],
      'each try is kept, with what went wrong',
    );
  });

  t.test('sync: a read that outlives the deadline is failed as expired, uncounted', async (t) => {
    const customer = await createCustomer(service.db);
    service.model.setBehaviour({ delayMs: 1500 });
    t.teardown(() => service.model.setBehaviour({}));
    const reading = submitPhoto(service, { key: customer.key, image: photo, sync: true });
    await waitFor(
      () => monthlyUsage(service.db, customer.accountId),
      (count) => count === 1,
    );
    await sleep(1100);
    await expireStaleSubmissions(service, 1);
    const [expired] = await service.db
      .selectFrom('submissions')
      .select(['status', 'error_code'])
      .where('account_id', '=', customer.accountId)
      .execute();
    t.same(expired, { status: 'failed', error_code: 'expired' }, 'expired while it was being read');
    t.equal(await monthlyUsage(service.db, customer.accountId), 0, 'its count given back');
    t.match(await reading, { status: 500, body: { errors: { server: ['Internal server error'] } } });
    t.equal(await monthlyUsage(service.db, customer.accountId), 0);
  });

  t.test('unknown routes and unexpected errors use the envelope', async (t) => {
    const notFound = await fetch(`${service.url}/api/nothing-here`);
    t.equal(notFound.status, 404);
    t.same(await notFound.json(), { errors: { route: ['Not found: GET /api/nothing-here'] } });

    const badPath = await fetch(`${service.url}/api/meter-reading/%E0%A4%A`);
    t.equal(badPath.status, 400, 'a path that is not valid percent-encoding');
    t.same(await badPath.json(), { errors: { request: ['The URL path is not valid percent-encoding'] } });
    const longPart = await fetch(`${service.url}/api/meters/${'a'.repeat(3000)}/readings`);
    t.equal(longPart.status, 414, 'a path part longer than the router takes');
    t.same(await longPart.json(), { errors: { request: ['A part of the URL path is longer than 100 characters'] } });

    const customer = await createCustomer(service.db);
    await service.db.schema.alterTable('submission_photos').renameTo('submission_photos_gone').execute();
    t.teardown(() => service.db.schema.alterTable('submission_photos_gone').renameTo('submission_photos').execute());
    const response = await submitPhoto(service, { key: customer.key, image: photo });
    t.equal(response.status, 500);
    t.match(response.body, { errors: { server: ['Internal server error'] }, request_id: UUID });
    t.notMatch(JSON.stringify(response.body), /submission_photos|at .*\.ts/, 'no SQL or stack trace leaks');
  });

  t.test('health and readiness', async (t) => {
    t.same(await (await fetch(`${service.url}/healthz`)).json(), { status: 'ok' });
    const ready = await fetch(`${service.url}/readyz`);
    t.equal(ready.status, 200);
  });
});
