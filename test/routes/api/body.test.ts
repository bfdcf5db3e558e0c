import { gzipSync } from 'node:zlib';
import t from 'tap';
import { renderMeterPhoto } from '../../fakes/meter-photo.ts';
import { seedReadings } from '../../helpers/seed-readings.ts';
import { createCustomer, startTestService } from '../../helpers/service.ts';

/** A body each operation takes, by its path in the OpenAPI document. */
const JSON_BODIES: Record<string, object> = {
  '/api/meters/{meter_id}': { max_flow_m3_per_hour: 6 },
  '/api/meter-reading/{reference_id}/correction': { reading: '00001.500' },
  '/api/meters/{meter_id}/readings': { reading: '00001.200', read_at: '2026-01-01' },
};

/**
 * Every API operation with a request body, as the OpenAPI document lists them, refuses one under a Content-Encoding
 * other than identity (src/routes/api/body.ts), so an operation added later is held to it too.
 */
t.test('every API route with a body refuses a Content-Encoding other than identity with a 415', async (t) => {
  const service = await startTestService(t, { worker: false });
  const customer = await createCustomer(service.db);
  const [referenceId] = await seedReadings(service.db, customer, [
    { meterId: 'Q-1', createdAt: new Date(Date.now() - 3_600_000), reading: '00001.000' },
  ]);
  const photo = await renderMeterPhoto();
  const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> } }>>;
  };
  const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).flatMap(([method, operation]) =>
      operation.requestBody ? [{ path, method, media: Object.keys(operation.requestBody.content) }] : [],
    ),
  );
  t.same(
    operations.map(({ method, path, media }) => `${method} ${path} ${media}`).sort(),
    [
      'patch /api/meters/{meter_id} application/json',
      'post /api/meter-reading multipart/form-data',
      'post /api/meter-reading/sync multipart/form-data',
      'post /api/meter-reading/{reference_id}/correction application/json',
      'post /api/meters/{meter_id}/readings application/json',
    ],
    'the operations with a body',
  );

  const countSubmissions = async () =>
    (
      await service.db
        .selectFrom('submissions')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n;
  let before = await countSubmissions();
  for (const { path, method, media } of operations) {
    const url = `${service.url}${path.replace('{meter_id}', 'Q-1').replace('{reference_id}', String(referenceId))}`;
    const multipart = media.includes('multipart/form-data');
    const send = async (encoding: string, compress = false) => {
      const form = new FormData();
      form.append('image', new Blob([photo]), 'meter.jpg');
      const json = JSON.stringify(JSON_BODIES[path]);
      const body = multipart ? form : compress ? gzipSync(json) : json;
      const response = await fetch(url, {
        method: method.toUpperCase(),
        headers: {
          authorization: `Bearer ${customer.key}`,
          'content-encoding': encoding,
          ...(multipart ? {} : { 'content-type': 'application/json' }),
        },
        body,
      });
      return { status: response.status, body: (await response.json()) as unknown };
    };
    const what = multipart ? 'the photo' : 'the JSON body';
    for (const [encoding, named] of [
      ['gzip', 'gzip'],
      ['GZip', 'gzip'],
      ['identity, br', 'br'],
      ['x'.repeat(100), `${'x'.repeat(40)}…`],
    ] as const) {
      t.same(
        await send(encoding),
        {
          status: 415,
          body: { errors: { request: [`Content-Encoding "${named}" is not accepted: send ${what} uncompressed`] } },
        },
        `${method} ${path}: Content-Encoding ${encoding.slice(0, 20)}`,
      );
    }
    if (!multipart) t.equal((await send('gzip', true)).status, 415, `${method} ${path}: a gzipped body`);
    t.equal(await countSubmissions(), before, `${method} ${path}: nothing stored`);
    const read = await send('identity');
    t.ok(read.status < 300, `${method} ${path}: Content-Encoding identity is read (${read.status})`);
    before = await countSubmissions();
  }
});
