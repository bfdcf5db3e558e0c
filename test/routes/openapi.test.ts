import t from 'tap';
import Fastify from 'fastify';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { startWebhookReceiver } from '../fakes/webhook-receiver.ts';
import { EXPORT_COLUMNS } from '../../src/schemas/meter-reading.ts';
import openapi from '../../src/plugins/external/openapi.ts';
import { sendTestEvent } from '../../src/webhooks/deliver.ts';
import { addWebhookEndpoint } from '../../src/webhooks/endpoints.ts';
import { TEST_EVENT_KINDS, WEBHOOK_EVENTS } from '../../src/webhooks/events.ts';
import { createCustomer, startTestService, waitFor, waitForMeter } from '../helpers/service.ts';

interface Exchange {
  method: string;
  /** The path template as the document names it, e.g. /api/meter-reading/{reference_id}. */
  operation: string;
  status: number;
  headers: Headers;
  body: unknown;
}

t.test('GET /openapi.json describes every endpoint, and real responses validate against it', async (t) => {
  const service = await startTestService(t);
  const photo = await renderMeterPhoto();
  const customer = await createCustomer(service.db);
  const auth = { authorization: `Bearer ${customer.key}` };

  const documentResponse = await fetch(`${service.url}/openapi.json`);
  t.equal(documentResponse.status, 200);
  const document: any = await documentResponse.json();
  t.equal(document.openapi, '3.1.0');
  t.same(Object.keys(document.paths).sort(), [
    '/api/meter-reading',
    '/api/meter-reading/sync',
    '/api/meter-reading/{reference_id}',
    '/api/meter-reading/{reference_id}/confirmation',
    '/api/meter-reading/{reference_id}/correction',
    '/api/meter-readings',
    '/api/meters',
    '/api/meters/{meter_id}',
    '/api/meters/{meter_id}/readings',
    '/healthz',
    '/readyz',
  ]);
  t.same(Object.keys(document.webhooks).sort(), [...TEST_EVENT_KINDS].sort(), 'every event an endpoint can receive');
  t.match(document.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer' });
  t.same(document.paths['/api/meter-reading'].post.requestBody.content['multipart/form-data'].schema, {
    $ref: '#/components/schemas/PhotoUpload',
  });
  t.match(document.components.schemas.PhotoUpload, {
    required: ['image'],
    properties: {
      image: { type: 'string', format: 'binary', contentMediaType: 'application/octet-stream' },
      meter_id: {},
      previous_reading: {},
      previous_read_at: {},
    },
  });
  t.match(
    document.paths['/api/meter-reading/{reference_id}/correction'].post.requestBody.content['application/json'].schema,
    {
      required: ['reading'],
    },
    'a body the route checks itself is documented',
  );
  t.match(
    document.paths['/api/meters/{meter_id}/readings'].get.parameters,
    [
      { in: 'query', name: 'limit', schema: { type: 'integer', maximum: 100 } },
      { in: 'query', name: 'starting_after' },
      { in: 'query', name: 'cursor', schema: { deprecated: true } },
      { in: 'path', name: 'meter_id', schema: { pattern: String } },
    ],
    'so are a query and a path parameter the route checks itself',
  );

  t.match(
    document.paths['/api/meter-readings'].get.responses['200'].content,
    {
      'application/json': { schema: Object },
      'text/csv': {
        schema: { type: 'string', description: `RFC 4180 CSV, header row first: ${EXPORT_COLUMNS.join(', ')}` },
      },
    },
    'the list’s 200 is JSON pages or the CSV billing export',
  );

  const exchanges: Exchange[] = [];
  async function call(method: string, operation: string, path: string, init: RequestInit = {}): Promise<Exchange> {
    const response = await fetch(`${service.url}${path}`, { method, ...init });
    const exchange = {
      method: method.toLowerCase(),
      operation,
      status: response.status,
      headers: response.headers,
      body: await response.json(),
    };
    exchanges.push(exchange);
    return exchange;
  }
  const upload = (image: Buffer, fields: Record<string, string> = {}) => {
    const form = new FormData();
    Object.entries(fields).forEach(([name, value]) => form.append(name, value));
    form.append('image', new Blob([image]), 'meter.jpg');
    return form;
  };
  const json = (body: unknown) => ({
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  // Every event, so that the real deliveries of the calls below (reading.corrected too) are checked against the
  // document.
  const endpoint = await addWebhookEndpoint(service.db, service.config, {
    accountId: customer.accountId,
    url: `${receiver.url}/hook`,
    events: WEBHOOK_EVENTS,
  });

  const accepted = await call('POST', '/api/meter-reading', '/api/meter-reading', {
    headers: auth,
    body: upload(photo),
  });
  await call('POST', '/api/meter-reading', '/api/meter-reading', {
    headers: { ...auth, 'idempotency-key': 'k1' },
    body: upload(photo),
  });
  await call('POST', '/api/meter-reading', '/api/meter-reading', {
    headers: { ...auth, 'idempotency-key': 'k1' },
    body: upload(photo),
  });
  await call('POST', '/api/meter-reading', '/api/meter-reading', {
    headers: { ...auth, 'idempotency-key': 'k1' },
    body: upload(Buffer.from('other')),
  });
  await call('POST', '/api/meter-reading', '/api/meter-reading', { body: upload(photo) });
  await call('POST', '/api/meter-reading', '/api/meter-reading', {
    headers: { ...auth, 'content-encoding': 'gzip' },
    body: upload(photo),
  });
  await call('POST', '/api/meter-reading', '/api/meter-reading', {
    headers: auth,
    body: upload(Buffer.from('not a photo')),
  });
  const sync = await call('POST', '/api/meter-reading/sync', '/api/meter-reading/sync', {
    headers: auth,
    body: upload(photo),
  });
  service.model.setBehaviour({ answer: { reading: '', confidence: 0, unobstructed: false } });
  const unreadable = await call('POST', '/api/meter-reading/sync', '/api/meter-reading/sync', {
    headers: auth,
    body: upload(photo),
  });
  service.model.setBehaviour({ status: 500 });
  await call('POST', '/api/meter-reading/sync', '/api/meter-reading/sync', { headers: auth, body: upload(photo) });
  service.model.setBehaviour({});

  const referenceOf = (exchange: Exchange) => (exchange.body as { reference_id: string }).reference_id;
  await waitForMeter(service.db, referenceOf(accepted));
  for (const reference of [
    referenceOf(accepted),
    referenceOf(sync),
    referenceOf(unreadable),
    '00000000-0000-4000-8000-000000000000',
    'nope',
  ]) {
    await call('GET', '/api/meter-reading/{reference_id}', `/api/meter-reading/${reference}`, { headers: auth });
  }
  await call('GET', '/api/meter-reading/{reference_id}', `/api/meter-reading/${referenceOf(sync)}`);
  await call('GET', '/api/meter-readings', '/api/meter-readings?limit=2', { headers: auth });
  await call('GET', '/api/meter-readings', '/api/meter-readings?status=failed&created_after=2020-01-01T00:00:00Z', {
    headers: auth,
  });
  await call('GET', '/api/meter-readings', '/api/meter-readings?limit=1000', { headers: auth });

  const meterPath = `/api/meters/${encodeURIComponent('SN/4711')}`;
  await call('PATCH', '/api/meters/{meter_id}', meterPath, json({ max_flow_m3_per_hour: 6 }));
  const metered = await call('POST', '/api/meter-reading/sync', '/api/meter-reading/sync', {
    headers: auth,
    body: upload(photo, { meter_id: 'SN/4711' }),
  });
  await call('POST', '/api/meter-reading/sync', '/api/meter-reading/sync', {
    headers: auth,
    body: upload(photo, { meter_id: 'SN/4711', previous_reading: '3000' }),
  });
  await call('PATCH', '/api/meters/{meter_id}', meterPath, json({ max_flow_m3_per_hour: null }));
  await call(
    'PATCH',
    '/api/meters/{meter_id}',
    meterPath,
    json({ layout: { whole_wheels: 5, fractional_wheels: 3, unit: 'm3' } }),
  );
  await call(
    'PATCH',
    '/api/meters/{meter_id}',
    meterPath,
    json({ layout: { whole_wheels: 5, fractional_wheels: 3, unit: 'gal' } }),
  );
  await call('PATCH', '/api/meters/{meter_id}', meterPath, json({ layout: null }));
  await call('PATCH', '/api/meters/{meter_id}', meterPath, json({ max_flow_m3_per_hour: 0 }));
  await call('PATCH', '/api/meters/{meter_id}', meterPath, {
    headers: { ...auth, 'content-type': 'application/json' },
    body: '{"max_flow',
  });
  await call('PATCH', '/api/meters/{meter_id}', meterPath, {
    headers: { ...auth, 'content-type': 'application/xml' },
    body: '<max_flow/>',
  });
  await call('PATCH', '/api/meters/{meter_id}', meterPath, {
    headers: { ...auth, 'content-type': 'application/json', 'content-encoding': 'gzip' },
    body: '{"max_flow_m3_per_hour":6}',
  });
  await call('PATCH', '/api/meters/{meter_id}', meterPath, {
    headers: { ...auth, 'content-type': 'text/plain' },
    body: '{"max_flow_m3_per_hour":6}',
  });
  await call(
    'PATCH',
    '/api/meters/{meter_id}',
    meterPath,
    json({ max_flow_m3_per_hour: 6, pad: 'x'.repeat(1_100_000) }),
  );
  await call('GET', '/api/meter-reading/{reference_id}', '/api/meter-reading/%E0%A4%A', { headers: auth });
  await call('GET', '/api/meter-reading/{reference_id}', `/api/meter-reading/${'a'.repeat(101)}`, { headers: auth });
  const correctionPath = `/api/meter-reading/${referenceOf(metered)}/correction`;
  await call('POST', '/api/meter-reading/{reference_id}/correction', correctionPath, json({ reading: '02390.300' }));
  await call('POST', '/api/meter-reading/{reference_id}/correction', correctionPath, json({ reading: 'twelve' }));
  await call(
    'POST',
    '/api/meter-reading/{reference_id}/correction',
    '/api/meter-reading/00000000-0000-4000-8000-000000000000/correction',
    json({ reading: '1' }),
  );
  await call(
    'POST',
    '/api/meter-reading/{reference_id}/confirmation',
    `/api/meter-reading/${referenceOf(metered)}/confirmation`,
    { headers: auth },
  );
  await call(
    'POST',
    '/api/meter-reading/{reference_id}/confirmation',
    `/api/meter-reading/${referenceOf(unreadable)}/confirmation`,
    { headers: auth },
  );
  await call(
    'POST',
    '/api/meter-reading/{reference_id}/confirmation',
    '/api/meter-reading/00000000-0000-4000-8000-000000000000/confirmation',
    {
      headers: auth,
    },
  );
  const manualPath = `${meterPath}/readings`;
  await call(
    'POST',
    '/api/meters/{meter_id}/readings',
    manualPath,
    json({ reading: '02391.000', read_at: new Date().toISOString() }),
  );
  await call(
    'POST',
    '/api/meters/{meter_id}/readings',
    manualPath,
    json({ reading: '2391', read_at: new Date().toISOString() }),
  );
  await call('POST', '/api/meters/{meter_id}/readings', manualPath, {
    headers: { ...auth, 'content-type': 'application/json' },
    body: '{"reading',
  });
  await call('POST', '/api/meters/{meter_id}/readings', manualPath, {
    headers: { ...auth, 'content-type': 'application/xml' },
    body: '<reading/>',
  });
  // The worker may already have failed it: back to processing means no outcome yet.
  await service.db
    .updateTable('submissions')
    .set({ status: 'processing', error_code: null, error_message: null, finished_at: null })
    .where('reference_id', '=', referenceOf(accepted))
    .execute();
  await call(
    'POST',
    '/api/meter-reading/{reference_id}/correction',
    `/api/meter-reading/${referenceOf(accepted)}/correction`,
    json({ reading: '1' }),
  );
  const firstPage = await call('GET', '/api/meters/{meter_id}/readings', `${meterPath}/readings?limit=1`, {
    headers: auth,
  });
  const { next_cursor: cursor } = firstPage.body as { next_cursor: string };
  await call('GET', '/api/meters/{meter_id}/readings', `${meterPath}/readings?limit=1&starting_after=${cursor}`, {
    headers: auth,
  });
  await call('GET', '/api/meters/{meter_id}/readings', `${meterPath}/readings?limit=1&cursor=${cursor}`, {
    headers: auth,
  });
  await call(
    'GET',
    '/api/meters/{meter_id}/readings',
    `${meterPath}/readings?cursor=${cursor}&starting_after=${cursor}`,
    { headers: auth },
  );
  await call('GET', '/api/meters/{meter_id}/readings', `${meterPath}/readings?limit=0`, { headers: auth });
  await call('GET', '/api/meters/{meter_id}/readings', '/api/meters/unknown/readings', { headers: auth });
  await call('GET', '/api/meters', '/api/meters?meter_id_prefix=SN&limit=1', { headers: auth });
  await call('GET', '/api/meters', '/api/meters?prefix=SN', { headers: auth });
  await call(
    'GET',
    '/api/meter-readings',
    '/api/meter-readings?meter_id=SN%2F4711&plausibility=ok&created_before=2100-01-01T00:00:00Z',
    { headers: auth },
  );
  await call('GET', '/api/meter-readings', '/api/meter-readings?meterid=SN', { headers: auth });
  await call('GET', '/healthz', '/healthz');
  await call('GET', '/readyz', '/readyz');

  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats.default(ajv);
  ajv.addSchema(document, 'openapi.json');
  const pointer = (...parts: string[]) =>
    parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

  for (const exchange of exchanges) {
    const name = `${exchange.method.toUpperCase()} ${exchange.operation} → ${exchange.status}`;
    const declared = document.paths[exchange.operation]?.[exchange.method]?.responses?.[String(exchange.status)];
    if (!declared) {
      t.fail(`${name} is not in the document`);
      continue;
    }
    const validate = ajv.getSchema(
      `openapi.json#/${pointer('paths', exchange.operation, exchange.method, 'responses', String(exchange.status), 'content', 'application/json', 'schema')}`,
    );
    t.ok(validate?.(exchange.body), name, { errors: validate?.errors, body: exchange.body });
    for (const header of Object.keys(declared.headers ?? {})) {
      if (header === 'idempotent-replayed') continue; // only on replays
      t.ok(exchange.headers.get(header), `${name} has the declared ${header} header`);
    }
  }
  const statuses = new Set(exchanges.map((exchange) => `${exchange.method} ${exchange.operation} ${exchange.status}`));
  for (const expected of [
    'get /api/meters/{meter_id}/readings 200',
    'get /api/meters/{meter_id}/readings 404',
    'get /api/meters/{meter_id}/readings 422',
    'patch /api/meters/{meter_id} 200',
    'patch /api/meters/{meter_id} 400',
    'patch /api/meters/{meter_id} 413',
    'patch /api/meters/{meter_id} 415',
    'get /api/meter-reading/{reference_id} 400',
    'get /api/meter-reading/{reference_id} 414',
    'patch /api/meters/{meter_id} 422',
    'post /api/meter-reading/{reference_id}/correction 200',
    'post /api/meter-reading/{reference_id}/correction 404',
    'post /api/meter-reading/{reference_id}/correction 409',
    'post /api/meter-reading/{reference_id}/correction 422',
    'post /api/meter-reading/{reference_id}/confirmation 200',
    'post /api/meter-reading/{reference_id}/confirmation 404',
    'post /api/meter-reading/{reference_id}/confirmation 409',
    'post /api/meters/{meter_id}/readings 201',
    'post /api/meters/{meter_id}/readings 400',
    'post /api/meters/{meter_id}/readings 415',
    'post /api/meters/{meter_id}/readings 422',
    'post /api/meter-reading 202',
    'post /api/meter-reading 415',
    'post /api/meter-reading 422',
    'post /api/meter-reading/sync 200',
    'post /api/meter-reading/sync 422',
    'post /api/meter-reading/sync 503',
    'get /api/meter-reading/{reference_id} 200',
    'get /api/meter-reading/{reference_id} 404',
    'get /api/meter-readings 200',
    'get /api/meter-readings 422',
    'get /api/meters 200',
    'get /api/meters 422',
  ]) {
    t.ok(statuses.has(expected), `exercised ${expected}`);
  }
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations as Record<string, any>)) {
      const around = ['400', '408', '417', '431', '503'];
      if (path.includes('{')) around.push('414');
      if (operation.requestBody?.content['application/json']) around.push('413');
      for (const status of around)
        t.ok(operation.responses[status], `${method} ${path} documents ${status}, which any request may get`);
      t.ok(
        exchanges.some(
          (exchange) => exchange.operation === path && exchange.method === method && exchange.status < 300,
        ),
        `a successful ${method} ${path} was checked`,
      );
    }
  }

  // The example of every kind, as the dashboard's test button sends it, beside the real deliveries above.
  for (const kind of TEST_EVENT_KINDS)
    await sendTestEvent(service.db, service.boss, customer.accountId, endpoint.id, kind);
  const deliveries = await waitFor(
    () => service.db.selectFrom('webhook_deliveries').select(['event_type', 'payload']).execute(),
    (rows) => rows.length > 0,
  );
  t.ok(
    deliveries.some(
      (delivery) =>
        delivery.event_type === 'reading.corrected' && !(delivery.payload as { data: { test?: boolean } }).data.test,
    ),
    'a real reading.corrected among them',
  );
  for (const delivery of deliveries) {
    const validate = ajv.getSchema(
      `openapi.json#/${pointer('webhooks', delivery.event_type, 'post', 'requestBody', 'content', 'application/json', 'schema')}`,
    );
    t.ok(validate?.(delivery.payload), `the ${delivery.event_type} webhook payload validates`, {
      errors: validate?.errors,
    });
  }
});

t.test('every operation has its stable operationId; schemas are named once and referenced', async (t) => {
  const service = await startTestService(t, { worker: false });
  const document: any = await (await fetch(`${service.url}/openapi.json`)).json();
  const operations = [
    ...Object.entries(document.paths).flatMap(([path, item]: [string, any]) =>
      Object.entries(item).map(([method, operation]: [string, any]) => ({ name: `${method} ${path}`, operation })),
    ),
    ...Object.entries(document.webhooks).map(([event, item]: [string, any]) => ({
      name: `webhook ${event}`,
      operation: item.post,
    })),
  ];
  const ids = Object.fromEntries(operations.map(({ name, operation }) => [name, operation.operationId]));
  // A generated client names its functions by these: renaming one breaks every client built on it.
  t.same(ids, {
    'get /healthz': 'checkLiveness',
    'get /readyz': 'checkReadiness',
    'post /api/meter-reading': 'submitMeterReading',
    'post /api/meter-reading/sync': 'submitMeterReadingSync',
    'get /api/meters': 'listMeters',
    'get /api/meters/{meter_id}/readings': 'listMeterHistory',
    'post /api/meters/{meter_id}/readings': 'addManualReading',
    'patch /api/meters/{meter_id}': 'updateMeterSettings',
    'post /api/meter-reading/{reference_id}/correction': 'correctMeterReading',
    'post /api/meter-reading/{reference_id}/confirmation': 'confirmMeterReading',
    'get /api/meter-reading/{reference_id}': 'getMeterReading',
    'get /api/meter-readings': 'listMeterReadings',
    ...Object.fromEntries(
      TEST_EVENT_KINDS.map((event) => [
        `webhook ${event}`,
        `receive${event.replace(/(?:^|[._])(\w)/g, (_match, letter) => letter.toUpperCase())}`,
      ]),
    ),
  });
  t.equal(new Set(Object.values(ids)).size, operations.length, 'each its own');
  for (const { name, operation } of operations) {
    t.match(operation.operationId, /^[a-z][A-Za-z]+$/, `${name}: camelCase`);
    if (name.startsWith('get /healthz') || name.startsWith('get /readyz') || name.startsWith('webhook'))
      t.same(operation.security, [], `${name} needs no key`);
    else t.same(operation.security, [{ bearerAuth: [] }], `${name} needs a key`);
  }

  // Every response of the API and every webhook payload is one of the named schemas.
  for (const { name, operation } of operations) {
    const bodies = [
      name.startsWith('webhook') ? operation.requestBody : undefined,
      ...Object.values(operation.responses),
    ].flatMap((body: any) => Object.entries(body?.content ?? {}).filter(([type]) => type !== 'text/csv'));
    if (name.startsWith('get /healthz') || name.startsWith('get /readyz')) continue;
    for (const [type, { schema }] of bodies as Array<[string, any]>) {
      t.match(schema, { $ref: /^#\/components\/schemas\/\w+$/ }, `${name}: ${type} is a named schema`);
      t.ok(document.components.schemas[schema.$ref.split('/').pop()], `${name}: ${schema.$ref} is in the document`);
    }
  }
  const envelopes = JSON.stringify(document).match(/"errors":\{"description"/g) ?? [];
  t.equal(envelopes.length, 1, 'the error envelope is written once');

  const { Submission, CompletedSubmission, FailedSubmission, UnfinishedSubmission } = document.components.schemas;
  t.same(
    Submission.anyOf.map((member: { $ref: string }) => member.$ref),
    [
      '#/components/schemas/UnfinishedSubmission',
      '#/components/schemas/CompletedSubmission',
      '#/components/schemas/FailedSubmission',
    ],
  );
  t.match(Submission.discriminator, {
    propertyName: 'status',
    mapping: { completed: '#/components/schemas/CompletedSubmission' },
  });
  t.match(UnfinishedSubmission.properties.status, { anyOf: [{ enum: ['pending'] }, { enum: ['processing'] }] });
  for (const field of [
    'reading',
    'value',
    'confidence',
    'escalated',
    'model',
    'reading_id',
    'meter_id',
    'needs_review',
    'finished_at',
    'correction',
  ]) {
    t.ok(CompletedSubmission.required.includes(field), `a completed submission always has ${field}`);
  }
  for (const field of ['error', 'needs_review', 'finished_at', 'correction'])
    t.ok(FailedSubmission.required.includes(field), `a failed one, ${field}`);
  t.notOk(
    'reading' in FailedSubmission.properties || 'reading' in UnfinishedSubmission.properties,
    'the others have no reading',
  );
});

t.test('a route without a schema does not break the document; only /api routes are in it', async (t) => {
  const app = Fastify();
  t.teardown(() => app.close());
  await app.register(openapi);
  app.get('/api/undocumented', async () => ({}));
  app.get('/dashboard/undocumented', async () => ({}));
  const response = await app.inject({ method: 'GET', url: '/openapi.json' });
  t.equal(response.statusCode, 200);
  t.same(Object.keys(response.json().paths), ['/api/undocumented']);
});

t.test('GET /docs: a reference page that loads nothing from outside', async (t) => {
  const service = await startTestService(t, { worker: false });
  const page = await fetch(`${service.url}/docs`);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /text\/html/);
  const html = await page.text();
  const pageUrl = page.url;
  const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => new URL(match[1], pageUrl));
  t.ok(assets.length >= 3, 'the page has its scripts and stylesheets');
  const texts = new Map<string, string>();
  for (const asset of assets) {
    t.equal(asset.origin, new URL(service.url).origin, `${asset.pathname} is served here`);
    const response = await fetch(asset);
    t.equal(response.status, 200, `${asset.pathname} loads`);
    texts.set(asset.pathname.split('/').pop()!, await response.text());
  }
  const initializer = texts.get('swagger-initializer.js') ?? '';
  t.notMatch(initializer.replace(/^\s*\/\/.*$/gm, ''), /https?:\/\//, 'the initializer’s code names no outside URL');
  t.match(initializer, /\/openapi\.json/);
  const csp = page.headers.get('content-security-policy') ?? '';
  t.notMatch(csp, /https?:|\*/, 'the page may load nothing from another origin');
});
