import { randomBytes } from 'node:crypto';
import t from 'tap';
import { sql } from 'kysely';
import { purgeExpiredIdempotencyKeys } from '../../../src/pipeline/idempotency.ts';
import { renderMeterPhoto } from '../../fakes/meter-photo.ts';
import { BOUNDARY, multipartBody, RawConnection, requestHead } from '../../helpers/raw-http.ts';
import {
  createCustomer,
  startTestService,
  submitPhoto,
  waitFor,
  waitForMeter,
  type Customer,
  type TestService,
} from '../../helpers/service.ts';

async function meterCount(service: TestService, customer: Customer): Promise<number> {
  const row = await service.db
    .selectFrom('submissions')
    .select(sql<number>`count(*)::int`.as('count'))
    .where('account_id', '=', customer.accountId)
    .executeTakeFirstOrThrow();
  return row.count;
}

/** Bytes of WAL the database cluster has written since `since` (a position from this function, or none). */
async function walWritten(service: TestService, since?: string): Promise<{ position: string; bytes: number }> {
  const { rows } = await sql<{ position: string; bytes: string | null }>`
    SELECT pg_current_wal_lsn()::text AS position, pg_wal_lsn_diff(pg_current_wal_lsn(), ${since ?? null}::pg_lsn)::text AS bytes`.execute(
    service.db,
  );
  return { position: rows[0].position, bytes: Number(rows[0].bytes ?? 0) };
}

/** A POST of `image` to the async endpoint, made by hand: its head, and its body to send when the test says. */
function rawSubmission(
  customer: Customer,
  image: Buffer,
  headers: Record<string, string>,
): { head: string; body: Buffer } {
  const body = multipartBody([{ name: 'image', filename: 'meter.jpg', contentType: 'image/jpeg', body: image }]);
  const head = requestHead('POST', '/api/meter-reading', {
    Authorization: `Bearer ${customer.key}`,
    'Content-Type': `multipart/form-data; boundary=${BOUNDARY}`,
    'Content-Length': String(body.length),
    ...headers,
  });
  return { head, body };
}

async function usage(service: TestService, customer: Customer): Promise<number> {
  const row = await service.db
    .selectFrom('api_usage')
    .select('request_count')
    .where('account_id', '=', customer.accountId)
    .executeTakeFirst();
  return row?.request_count ?? 0;
}

t.test('Idempotency-Key on both POST endpoints', async (t) => {
  const service = await startTestService(t);
  const photo = await renderMeterPhoto();
  const otherPhoto = await renderMeterPhoto('01234', '567');
  // A photo whose header passes, made large by bytes after its end that no compression shrinks.
  const largePhoto = Buffer.concat([photo, randomBytes(4 * 1024 * 1024)]);
  const withKey = (key: string) => ({ headers: { 'idempotency-key': key } });

  t.test('async: a retry replays the 202 without a second meter or count', async (t) => {
    const customer = await createCustomer(service.db);
    const first = await submitPhoto(service, { key: customer.key, image: photo, ...withKey('retry-1') });
    const retry = await submitPhoto(service, { key: customer.key, image: photo, ...withKey('retry-1') });
    t.equal(first.status, 202);
    t.equal(first.headers.get('idempotent-replayed'), null);
    t.equal(retry.status, 202);
    t.equal(retry.headers.get('idempotent-replayed'), 'true');
    t.same(retry.body, first.body);
    t.equal(retry.headers.get('location'), first.headers.get('location'));
    t.equal(await meterCount(service, customer), 1);
    t.equal(await usage(service, customer), 1);
    const another = await submitPhoto(service, { key: customer.key, image: photo, ...withKey('retry-2') });
    t.not(another.body.reference_id, first.body.reference_id, 'another key is another submission');
    // Both are read in the background (the model is asked once each); the next test counts the model's requests.
    for (const { body } of [first, another]) await waitForMeter(service.db, body.reference_id);
  });

  t.test('sync: a retry replays the reading without asking the model again', async (t) => {
    const customer = await createCustomer(service.db);
    const asked = service.model.requests.length;
    const first = await submitPhoto(service, { key: customer.key, image: photo, sync: true, ...withKey('sync-1') });
    const retry = await submitPhoto(service, { key: customer.key, image: photo, sync: true, ...withKey('sync-1') });
    t.equal(first.status, 200);
    t.match(retry, { status: 200, body: first.body });
    t.equal(retry.headers.get('idempotent-replayed'), 'true');
    t.equal(service.model.requests.length, asked + 1);
    t.equal(await meterCount(service, customer), 1);
  });

  t.test('a sync failure that created a meter is replayed too', async (t) => {
    const customer = await createCustomer(service.db);
    service.model.setBehaviour({ answer: { reading: '', confidence: 0, unobstructed: false } });
    t.teardown(() => service.model.setBehaviour({}));
    const first = await submitPhoto(service, { key: customer.key, image: photo, sync: true, ...withKey('unreadable') });
    service.model.setBehaviour({});
    const retry = await submitPhoto(service, { key: customer.key, image: photo, sync: true, ...withKey('unreadable') });
    t.equal(first.status, 422);
    t.match(retry, { status: 422, body: first.body });
    t.equal(retry.headers.get('idempotent-replayed'), 'true');
  });

  t.test('the same key with another image or endpoint is a 422 idempotency', async (t) => {
    const customer = await createCustomer(service.db);
    t.equal((await submitPhoto(service, { key: customer.key, image: photo, ...withKey('k') })).status, 202);
    const otherImage = await submitPhoto(service, { key: customer.key, image: otherPhoto, ...withKey('k') });
    t.match(otherImage, { status: 422, body: { errors: { idempotency: [/another request/] } } });
    const otherEndpoint = await submitPhoto(service, { key: customer.key, image: photo, sync: true, ...withKey('k') });
    t.match(otherEndpoint, { status: 422, body: { errors: { idempotency: [/another request/] } } });
    t.equal(await meterCount(service, customer), 1);
  });

  t.test(
    'the same key and photo with another meter_id, previous_reading or previous_read_at is a 422 idempotency naming it',
    async (t) => {
      const customer = await createCustomer(service.db);
      const fields = { meter_id: 'SN-4711', previous_reading: '02380.114', previous_read_at: '2026-11-01' };
      const first = await submitPhoto(service, { key: customer.key, image: photo, fields, ...withKey('fields') });
      t.equal(first.status, 202);
      const changes: Array<[Record<string, string>, RegExp]> = [
        [{ ...fields, meter_id: 'SN-4712' }, /another request: meter_id differs$/],
        [{ ...fields, previous_reading: '02380.115' }, /another request: previous_reading differs$/],
        [{ ...fields, previous_read_at: '2026-11-02' }, /another request: previous_read_at differs$/],
        [
          { previous_reading: fields.previous_reading, previous_read_at: fields.previous_read_at },
          /another request: meter_id differs$/,
        ],
        [
          { meter_id: 'SN-4712', previous_reading: '606' },
          /another request: meter_id, previous_reading, previous_read_at differ$/,
        ],
      ];
      for (const [changed, message] of changes) {
        const response = await submitPhoto(service, {
          key: customer.key,
          image: photo,
          fields: changed,
          ...withKey('fields'),
        });
        t.match(response, { status: 422, body: { errors: { idempotency: [message] } } }, JSON.stringify(changed));
      }
      const otherImage = await submitPhoto(service, {
        key: customer.key,
        image: otherPhoto,
        fields: { ...fields, meter_id: 'SN-4712' },
        ...withKey('fields'),
      });
      t.match(otherImage, {
        status: 422,
        body: { errors: { idempotency: [/another request: image or endpoint, meter_id differ$/] } },
      });
      const retry = await submitPhoto(service, { key: customer.key, image: photo, fields, ...withKey('fields') });
      t.match(retry, { status: 202, body: first.body });
      t.equal(retry.headers.get('idempotent-replayed'), 'true');
      t.equal(await meterCount(service, customer), 1);
    },
  );

  t.test(
    'a key claimed before its text fields were recorded compares route and photo, as when it was claimed',
    async (t) => {
      const customer = await createCustomer(service.db);
      const first = await submitPhoto(service, {
        key: customer.key,
        image: photo,
        fields: { meter_id: 'SN-1' },
        ...withKey('before-016'),
      });
      await service.db
        .updateTable('idempotency_keys')
        .set({ fields_sha256: null })
        .where('account_id', '=', customer.accountId)
        .execute();
      const retry = await submitPhoto(service, {
        key: customer.key,
        image: photo,
        fields: { meter_id: 'SN-1' },
        ...withKey('before-016'),
      });
      t.match(retry, { status: 202, body: first.body });
      t.equal(retry.headers.get('idempotent-replayed'), 'true');
      const otherImage = await submitPhoto(service, {
        key: customer.key,
        image: otherPhoto,
        fields: { meter_id: 'SN-1' },
        ...withKey('before-016'),
      });
      t.match(otherImage, {
        status: 422,
        body: { errors: { idempotency: [/another request: image or endpoint differs$/] } },
      });
    },
  );

  t.test(
    'over the limit, a new key is refused from the headers: the body is not awaited, and the connection stays usable',
    async (t) => {
      const customer = await createCustomer(service.db, { monthlyLimit: 0 });
      const connection = await RawConnection.open(service.url);
      t.teardown(() => connection.close());
      const { head, body } = rawSubmission(customer, largePhoto, { 'Idempotency-Key': 'new' });
      connection.write(head);
      connection.write(body.subarray(0, 64 * 1024));
      const refusal = await connection.response(5000);
      t.equal(refusal.status, 422);
      t.match(JSON.parse(refusal.body), { errors: { usage: [/limit of 0/] } });
      connection.write(body.subarray(64 * 1024));
      connection.write(requestHead('GET', '/healthz', {}));
      t.equal(
        (await connection.response(5000)).status,
        200,
        'the rest of the body was dropped, and the next request answered',
      );
    },
  );

  t.test('over the limit, uploads with new keys are refused without writing them to the database', async (t) => {
    const customer = await createCustomer(service.db, { monthlyLimit: 1 });
    const accepted = await submitPhoto(service, { key: customer.key, image: photo, ...withKey('the-one') });
    await waitForMeter(service.db, accepted.body.reference_id);
    const before = await walWritten(service);
    for (let i = 0; i < 3; i++) {
      const refused = await submitPhoto(service, { key: customer.key, image: largePhoto, ...withKey(`over-${i}`) });
      t.match(refused, { status: 422, body: { errors: { usage: [/limit of 1/] } } });
    }
    const { bytes } = await walWritten(service, before.position);
    t.ok(bytes < largePhoto.length / 2, `3 refused uploads of ${largePhoto.length} bytes wrote ${bytes} bytes of WAL`);
    t.equal(await meterCount(service, customer), 1);
  });

  t.test(
    'over the limit, a key taken at the headers but free when the body arrives is refused before the upload is stored',
    async (t) => {
      const customer = await createCustomer(service.db, { monthlyLimit: 0 });
      await sql`INSERT INTO idempotency_keys (account_id, idempotency_key, request_sha256)
              VALUES (${customer.accountId}, 'in-flight', 'the first request')`.execute(service.db);
      const connection = await RawConnection.open(service.url);
      t.teardown(() => connection.close());
      const { head, body } = rawSubmission(customer, largePhoto, {
        'Idempotency-Key': 'in-flight',
        Expect: '100-continue',
      });
      connection.write(head);
      t.equal((await connection.response(5000)).status, 100, 'a possible retry is let through to its upload');
      // The first request was refused meanwhile and released the key: this one is new.
      await service.db.deleteFrom('idempotency_keys').where('account_id', '=', customer.accountId).execute();
      const before = await walWritten(service);
      connection.write(body);
      const refusal = await connection.response(5000);
      t.equal(refusal.status, 422);
      t.match(JSON.parse(refusal.body), { errors: { usage: [/limit of 0/] } });
      const { bytes } = await walWritten(service, before.position);
      t.ok(
        bytes < largePhoto.length / 2,
        `the refused upload of ${largePhoto.length} bytes wrote ${bytes} bytes of WAL`,
      );
      const keys = await service.db
        .selectFrom('idempotency_keys')
        .select('idempotency_key')
        .where('account_id', '=', customer.accountId)
        .execute();
      t.same(keys, [], 'the key was released');
    },
  );

  t.test('keys are per account', async (t) => {
    const one = await createCustomer(service.db);
    const two = await createCustomer(service.db);
    const first = await submitPhoto(service, { key: one.key, image: photo, ...withKey('shared') });
    const second = await submitPhoto(service, { key: two.key, image: otherPhoto, ...withKey('shared') });
    t.equal(second.status, 202);
    t.not(second.body.reference_id, first.body.reference_id);
    t.equal(second.headers.get('idempotent-replayed'), null);
  });

  t.test('a malformed key is a 422 idempotency', async (t) => {
    const customer = await createCustomer(service.db);
    const response = await submitPhoto(service, { key: customer.key, image: photo, ...withKey('k'.repeat(256)) });
    t.match(response, { status: 422, body: { errors: { idempotency: [/1 to 255/] } } });
    t.equal(await meterCount(service, customer), 0);
  });

  t.test('a refused request stores nothing: the key can be used again', async (t) => {
    const customer = await createCustomer(service.db, { monthlyLimit: 1 });
    const badImage = await submitPhoto(service, {
      key: customer.key,
      image: Buffer.from('not a photo'),
      ...withKey('fix-it'),
    });
    t.match(badImage, { status: 422, body: { errors: { image: [String] } } });
    const accepted = await submitPhoto(service, { key: customer.key, image: photo, ...withKey('fix-it') });
    t.equal(accepted.status, 202, 'the same key with the corrected photo is accepted');
    const overLimit = await submitPhoto(service, { key: customer.key, image: photo, ...withKey('over') });
    t.match(overLimit, { status: 422, body: { errors: { usage: [/limit of 1/] } } });
    const keys = await service.db
      .selectFrom('idempotency_keys')
      .select('idempotency_key')
      .where('account_id', '=', customer.accountId)
      .execute();
    t.same(
      keys.map((row) => row.idempotency_key),
      ['fix-it'],
      'the refused key was released',
    );
  });

  t.test('a replay is answered even when the month’s quota is used up, and not counted', async (t) => {
    const customer = await createCustomer(service.db, { monthlyLimit: 1 });
    const first = await submitPhoto(service, { key: customer.key, image: photo, ...withKey('last-one') });
    const retry = await submitPhoto(service, { key: customer.key, image: photo, ...withKey('last-one') });
    t.match(retry, { status: 202, body: first.body });
    t.equal(await usage(service, customer), 1);
  });

  t.test('concurrent requests with one key: one meter, every answer the same', async (t) => {
    const customer = await createCustomer(service.db);
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => submitPhoto(service, { key: customer.key, image: photo, ...withKey('burst') })),
    );
    t.same(new Set(responses.map((response) => response.status)), new Set([202]));
    t.equal(new Set(responses.map((response) => response.body.reference_id)).size, 1);
    t.equal(
      responses.filter((response) => response.headers.get('idempotent-replayed') === null).length,
      1,
      'one original',
    );
    t.equal(await meterCount(service, customer), 1);
    t.equal(await usage(service, customer), 1);
  });

  t.test('concurrent sync requests: a retry while the first is being read waits for its answer', async (t) => {
    const customer = await createCustomer(service.db);
    service.model.setBehaviour({ delayMs: 1000 });
    t.teardown(() => service.model.setBehaviour({}));
    const first = submitPhoto(service, { key: customer.key, image: photo, sync: true, ...withKey('slow') });
    await waitFor(
      () =>
        service.db
          .selectFrom('idempotency_keys')
          .select('idempotency_key')
          .where('account_id', '=', customer.accountId)
          .executeTakeFirst(),
      (claim) => claim !== undefined,
    );
    const retry = await submitPhoto(service, { key: customer.key, image: photo, sync: true, ...withKey('slow') });
    t.match(retry, { status: 200, body: (await first).body });
    t.equal(retry.headers.get('idempotent-replayed'), 'true');
    t.equal(await meterCount(service, customer), 1);
  });

  t.test('keys expire after 24 hours and are purged; an abandoned claim is taken over', async (t) => {
    const customer = await createCustomer(service.db);
    const first = await submitPhoto(service, { key: customer.key, image: photo, ...withKey('old') });
    await service.db
      .updateTable('idempotency_keys')
      .set({ created_at: sql`now() - interval '25 hours'` } as never)
      .where('account_id', '=', customer.accountId)
      .execute();
    const later = await submitPhoto(service, { key: customer.key, image: otherPhoto, ...withKey('old') });
    t.equal(later.status, 202, 'an expired key is a new key');
    t.not(later.body.reference_id, first.body.reference_id);

    await sql`INSERT INTO idempotency_keys (account_id, idempotency_key, request_sha256, created_at)
              VALUES (${customer.accountId}, 'crashed', 'whatever', now() - interval '11 minutes')`.execute(service.db);
    t.equal((await submitPhoto(service, { key: customer.key, image: photo, ...withKey('crashed') })).status, 202);

    await service.db
      .updateTable('idempotency_keys')
      .set({ created_at: sql`now() - interval '25 hours'` } as never)
      .where('idempotency_key', '=', 'old')
      .execute();
    t.equal(await purgeExpiredIdempotencyKeys(service.db), 1);
    const left = await service.db
      .selectFrom('idempotency_keys')
      .select('idempotency_key')
      .where('account_id', '=', customer.accountId)
      .execute();
    t.same(
      left.map((row) => row.idempotency_key),
      ['crashed'],
    );
  });
});
