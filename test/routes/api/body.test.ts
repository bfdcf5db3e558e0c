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

t.test('every API route with a JSON body refuses a key it does not take with a 422 naming it', async (t) => {
  const service = await startTestService(t, { worker: false });
  const customer = await createCustomer(service.db);
  const [referenceId] = await seedReadings(service.db, customer, [
    { meterId: 'Q-1', createdAt: new Date(Date.now() - 3_600_000), reading: '00001.000' },
  ]);
  const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: JsonSchema }> } }>>;
  };
  const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).flatMap(([method, operation]) => {
      const schema = operation.requestBody?.content['application/json']?.schema;
      return schema ? [{ path, method, schema }] : [];
    }),
  );
  t.equal(operations.length, Object.keys(JSON_BODIES).length, 'the operations with a JSON body');

  const send = async (method: string, path: string, body: object) => {
    const url = `${service.url}${path.replace('{meter_id}', 'Q-1').replace('{reference_id}', String(referenceId))}`;
    const response = await fetch(url, {
      method: method.toUpperCase(),
      headers: { authorization: `Bearer ${customer.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as unknown };
  };
  for (const { path, method, schema } of operations) {
    t.equal(schema.additionalProperties, false, `${method} ${path}: the document says so`);
    const rule = `Unknown field: the body takes ${Object.keys(schema.properties ?? {}).join(', ')}`;
    const body = JSON_BODIES[path]!;
    for (const key of ['foo', 'READING', 'max_flow', 'constructor']) {
      const extra = JSON.parse(`{${JSON.stringify(key)}:1,${JSON.stringify(body).slice(1)}`) as object;
      t.same(
        await send(method, path, extra),
        { status: 422, body: { errors: { [key]: [rule] } } },
        `${method} ${path}: ${key}`,
      );
    }
    t.same(
      await send(method, path, { ...body, ['k'.repeat(1000)]: 1 }),
      { status: 422, body: { errors: { [`${'k'.repeat(40)}…`]: [rule] } } },
      `${method} ${path}: a long key, cut`,
    );
  }

  const layout = { whole_wheels: 5, fractional_wheels: 3, unit: 'm3' };
  t.same(await send('patch', '/api/meters/{meter_id}', { layout: { ...layout, decimals: 3 } }), {
    status: 422,
    body: { errors: { 'layout.decimals': ['Unknown field: layout takes whole_wheels, fractional_wheels, unit'] } },
  });
  t.equal((await send('patch', '/api/meters/{meter_id}', { layout })).status, 200, 'a layout of its own keys');
});

interface JsonSchema {
  additionalProperties?: boolean;
  properties?: Record<string, unknown>;
}
