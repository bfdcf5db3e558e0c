import { crc32 } from 'node:zlib';
import { sql } from 'kysely';
import t, { type Test } from 'tap';
import { MAX_IMAGE_BYTES } from '../../../src/images.ts';
import { renderMeterPhoto } from '../../fakes/meter-photo.ts';
import { BOUNDARY, multipartBody, RawConnection, requestHead, type Part } from '../../helpers/raw-http.ts';
import { createCustomer, startTestService, type TestService } from '../../helpers/service.ts';

const photo = await renderMeterPhoto();
const MULTIPART = `multipart/form-data; boundary=${BOUNDARY}`;
const ENDPOINTS = ['/api/meter-reading', '/api/meter-reading/sync'];

interface BadRequest {
  contentType?: string;
  body: Buffer;
  /** Sent as chunked transfer encoding instead of with a Content-Length. */
  chunked?: boolean;
}

const imagePart = (body: Buffer | string = photo, extra: Partial<Part> = {}): Part => ({
  name: 'image',
  filename: 'meter.jpg',
  contentType: 'image/jpeg',
  body,
  ...extra,
});
const multipart = (parts: Part[], options?: Parameters<typeof multipartBody>[1]): BadRequest => ({
  contentType: MULTIPART,
  body: multipartBody(parts, options),
});
const cut = (request: BadRequest, bytes: number): BadRequest => ({ ...request, body: request.body.subarray(0, bytes) });
const complete = multipart([imagePart()]);
const headOfImagePart = complete.body.indexOf('\r\n\r\n') + 4;

/** A PNG whose header claims a 40000 × 40000 picture (1.6 GP) in 67 bytes. */
function pixelBombPng(): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(40_000, 0);
  header.writeUInt32BE(40_000, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const chunk = (type: string, data: Buffer) => {
    const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(typed));
    return Buffer.concat([length, typed, crc]);
  };
  return Buffer.concat([
    Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'),
    chunk('IHDR', header),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10000" height="9999"><rect width="10" height="10"/></svg>';

/** At least 30 kinds of malformed upload; each must get 422 `image`. */
const CORPUS: Record<string, BadRequest> = {
  'no body and no content type': { body: Buffer.alloc(0) },
  'an empty multipart body': { contentType: MULTIPART, body: Buffer.alloc(0) },
  'multipart without a boundary': { contentType: 'multipart/form-data', body: complete.body },
  'a boundary that is not in the body': { contentType: 'multipart/form-data; boundary=elsewhere', body: complete.body },
  'a raw JPEG body': { contentType: 'image/jpeg', body: photo },
  'a JSON body': { contentType: 'application/json', body: Buffer.from('{"image":"aGVsbG8="}') },
  'malformed JSON': { contentType: 'application/json', body: Buffer.from('{"image":') },
  'plain text': { contentType: 'text/plain', body: Buffer.from('a meter') },
  'a URL-encoded form': { contentType: 'application/x-www-form-urlencoded', body: Buffer.from('image=abc') },
  'an octet stream': { contentType: 'application/octet-stream', body: photo },
  'a nonsense content type': { contentType: 'nonsense', body: photo },
  'multipart/mixed': { contentType: `multipart/mixed; boundary=${BOUNDARY}`, body: complete.body },
  'the file in another field': multipart([imagePart(photo, { name: 'photo' })]),
  'the file in IMAGE': multipart([imagePart(photo, { name: 'IMAGE' })]),
  'two image files': multipart([imagePart(), imagePart()]),
  'an image and another file': multipart([imagePart(), imagePart(photo, { name: 'thumbnail' })]),
  'another file first': multipart([imagePart(photo, { name: 'thumbnail' }), imagePart()]),
  'an unknown text field': multipart([imagePart(), { name: 'comment', body: 'hello' }]),
  'an unknown text field first': multipart([{ name: 'comment', body: 'hello' }, imagePart()]),
  'image as a text field': multipart([{ name: 'image', body: photo.toString('base64') }]),
  'only allowed text fields': multipart([{ name: 'meter_id', body: 'm-1' }]),
  'meter_id twice': multipart([imagePart(), { name: 'meter_id', body: 'a' }, { name: 'meter_id', body: 'b' }]),
  'a field named __proto__': multipart([{ name: '__proto__', body: 'x' }, imagePart()]),
  'a file with an empty field name': multipart([imagePart(photo, { name: '' })]),
  'an empty image file': multipart([imagePart(Buffer.alloc(0))]),
  'an image over 10 MB': multipart([
    imagePart(Buffer.concat([photo, Buffer.alloc(MAX_IMAGE_BYTES + 1 - photo.length, 0xff)])),
  ]),
  'cut in the middle of the file': cut(complete, headOfImagePart + Math.floor(photo.length / 2)),
  'cut right after the part headers': cut(complete, headOfImagePart),
  'cut inside the part headers': cut(complete, 40),
  'no closing boundary': multipart([imagePart()], { close: false }),
  'cut and chunked': { ...cut(complete, headOfImagePart + 100), chunked: true },
  'a part without Content-Disposition': {
    contentType: MULTIPART,
    body: Buffer.from(`--${BOUNDARY}\r\nContent-Type: image/jpeg\r\n\r\nxyz\r\n--${BOUNDARY}--\r\n`),
  },
  'an SVG': multipart([imagePart(SVG, { filename: 'meter.svg', contentType: 'image/svg+xml' })]),
  'an SVG sent as a JPEG': multipart([imagePart(SVG)]),
  'a PDF': multipart([imagePart('%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\n%%EOF', { filename: 'meter.pdf' })]),
  HTML: multipart([imagePart('<!doctype html><title>meter</title>')]),
  'a JPEG signature and nothing else': multipart([imagePart(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0]))]),
  'a 1.6 gigapixel PNG header': multipart([
    imagePart(pixelBombPng(), { filename: 'bomb.png', contentType: 'image/png' }),
  ]),
};

async function send(connection: RawConnection, path: string, key: string, request: BadRequest): Promise<void> {
  const framing = request.chunked
    ? { 'Transfer-Encoding': 'chunked' }
    : { 'Content-Length': String(request.body.length) };
  connection.write(
    requestHead('POST', path, { Authorization: `Bearer ${key}`, 'Content-Type': request.contentType, ...framing }),
  );
  if (!request.chunked) connection.write(request.body);
  else if (request.body.length)
    connection.write(
      Buffer.concat([
        Buffer.from(`${request.body.length.toString(16)}\r\n`),
        request.body,
        Buffer.from('\r\n0\r\n\r\n'),
      ]),
    );
  else connection.write('0\r\n\r\n');
}

/** The connection still carries requests after a refusal, unless the refusal said it would close it. */
async function assertConnectionReusable(
  t: Test,
  connection: RawConnection,
  refusal: { headers: Record<string, string> },
  name: string,
) {
  if (refusal.headers.connection === 'close') return;
  connection.write(requestHead('GET', '/healthz', {}));
  const next = await connection.response(5000).catch((error: Error) => ({ status: 0, body: error.message }));
  t.equal(next.status, 200, `${name}: the next request on the same connection is answered`);
}

async function countAccepted(service: TestService, accountId: string) {
  const { rows } = await sql<{ meters: number; usage: number }>`
    SELECT (SELECT count(*)::int FROM submissions WHERE account_id = ${accountId}) AS meters,
           (SELECT coalesce(sum(request_count), 0)::int FROM api_usage WHERE account_id = ${accountId}) AS usage`.execute(
    service.db,
  );
  return rows[0];
}

t.test('bad uploads', async (t) => {
  const service = await startTestService(t);
  const customer = await createCustomer(service.db);

  t.test(
    `a corpus of ${Object.keys(CORPUS).length} malformed uploads: 422 image at both endpoints, no hang, the connection freed`,
    async (t) => {
      t.ok(Object.keys(CORPUS).length >= 30);
      for (const path of ENDPOINTS) {
        for (const [name, request] of Object.entries(CORPUS)) {
          const connection = await RawConnection.open(service.url);
          await send(connection, path, customer.key, request);
          const response = await connection
            .response(5000)
            .catch((error: Error) => ({ status: 0, headers: {}, body: error.message }));
          t.equal(response.status, 422, `${path}: ${name}`);
          t.match(response.body, /^\{"errors":\{"image":\["/, `${path}: ${name}: ${response.body.slice(0, 160)}`);
          await assertConnectionReusable(t, connection, response, `${path}: ${name}`);
          connection.close();
        }
      }
      t.same(
        await countAccepted(service, customer.accountId),
        { meters: 0, usage: 0 },
        'nothing was stored or counted',
      );
      t.equal((await fetch(`${service.url}/healthz`)).status, 200, 'the process is alive');
    },
  );

  t.test('a wrong field is answered before the rest of the body has been sent', async (t) => {
    const connection = await RawConnection.open(service.url);
    t.teardown(() => connection.close());
    const body = multipartBody([imagePart(Buffer.alloc(4 * 1024 * 1024, 1), { name: 'photo' })]);
    connection.write(
      requestHead('POST', '/api/meter-reading', {
        Authorization: `Bearer ${customer.key}`,
        'Content-Type': MULTIPART,
        'Content-Length': String(body.length),
      }),
    );
    connection.write(body.subarray(0, 64 * 1024));
    const response = await connection.response(5000);
    t.equal(response.status, 422);
    t.match(JSON.parse(response.body), { errors: { image: [/Unexpected file field "photo"/] } });
    connection.write(body.subarray(64 * 1024));
    await assertConnectionReusable(t, connection, response, 'after the rest was sent');
  });

  t.test('a compressed upload is refused from its headers, before its body is sent', async (t) => {
    for (const path of ENDPOINTS) {
      const connection = await RawConnection.open(service.url);
      t.teardown(() => connection.close());
      connection.write(
        requestHead('POST', path, {
          Authorization: `Bearer ${customer.key}`,
          'Content-Type': MULTIPART,
          'Content-Encoding': 'gzip',
          'Content-Length': String(complete.body.length),
        }),
      );
      const response = await connection.response(5000);
      t.equal(response.status, 415, path);
      t.not(response.headers.connection, 'close', `${path}: the connection stays open`);
      t.same(JSON.parse(response.body), {
        errors: { request: ['Content-Encoding "gzip" is not accepted: send the photo uncompressed'] },
      });
      connection.write(complete.body);
      await assertConnectionReusable(t, connection, response, `${path}: after the body was sent`);
    }
    t.same(await countAccepted(service, customer.accountId), { meters: 0, usage: 0 }, 'nothing stored or counted');
  });

  t.test('two image files on a keep-alive connection: the next request is not held up', async (t) => {
    const connection = await RawConnection.open(service.url);
    t.teardown(() => connection.close());
    const request = multipart([imagePart(), imagePart(Buffer.alloc(2 * 1024 * 1024, 7))]);
    await send(connection, '/api/meter-reading', customer.key, request);
    const refusal = await connection.response(5000);
    t.match(refusal, { status: 422, body: /Send exactly one file in the field \\"image\\"/ });
    t.not(refusal.headers.connection, 'close');
    await send(connection, '/api/meter-reading', customer.key, complete);
    const accepted = await connection.response(5000);
    t.equal(accepted.status, 202, 'a good upload on the same connection is accepted');
  });

  t.test('the allowed text fields come back with the image, whatever their order', async (t) => {
    const connection = await RawConnection.open(service.url);
    t.teardown(() => connection.close());
    const request = multipart([
      { name: 'previous_reading', body: '00123.456' },
      imagePart(),
      { name: 'meter_id', body: 'flat-4:cold' },
      { name: 'previous_read_at', body: '2026-10-01T08:00:00Z' },
    ]);
    await send(connection, '/api/meter-reading', customer.key, request);
    t.equal((await connection.response(5000)).status, 202);
  });

  t.test('a 16 KB header gets 431 in the envelope', async (t) => {
    const connection = await RawConnection.open(service.url);
    t.teardown(() => connection.close());
    connection.write(requestHead('GET', '/healthz', { 'X-Padding': 'x'.repeat(16 * 1024) }));
    const response = await connection.response(5000);
    t.equal(response.status, 431);
    t.same(JSON.parse(response.body), { errors: { request: ['The request headers are too large'] } });
    t.equal((await fetch(`${service.url}/healthz`)).status, 200, 'the process is alive');
  });

  t.test('a request line that is not HTTP gets 400 in the envelope', async (t) => {
    const connection = await RawConnection.open(service.url);
    t.teardown(() => connection.close());
    connection.write('HELLO\r\n\r\n');
    const response = await connection.response(5000);
    t.equal(response.status, 400);
    t.same(JSON.parse(response.body), { errors: { request: ['The request is not valid HTTP'] } });
  });
});
