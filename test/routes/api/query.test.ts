import t from 'tap';
import { seedReadings } from '../../helpers/seed-readings.ts';
import { createCustomer, startTestService } from '../../helpers/service.ts';

interface Parameter {
  name: string;
  in: string;
}

/**
 * Every GET route of the API that takes a query, as the OpenAPI document lists them: each checks
 * its query the same way (src/routes/api/query.ts), so a route added later is held to it too.
 */
t.test('every API GET route with a query refuses an unknown or repeated parameter with a 422 naming it', async (t) => {
  const service = await startTestService(t, { worker: false });
  const customer = await createCustomer(service.db);
  await seedReadings(service.db, customer, [{ meterId: 'Q-1', createdAt: new Date(), reading: '00001.000' }]);
  const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as {
    paths: Record<string, { get?: { parameters?: Parameter[] } }>;
  };
  const routes = Object.entries(document.paths).flatMap(([path, operations]) => {
    const query = (operations.get?.parameters ?? [])
      .filter((parameter) => parameter.in === 'query')
      .map((parameter) => parameter.name);
    return query.length > 0 ? [{ path: path.replace('{meter_id}', 'Q-1'), query }] : [];
  });
  t.same(
    routes.map((route) => route.path).sort(),
    ['/api/meter-readings', '/api/meters', '/api/meters/Q-1/readings'],
    'the routes that take a query',
  );

  const get = async (path: string) => {
    const response = await fetch(`${service.url}${path}`, { headers: { authorization: `Bearer ${customer.key}` } });
    return { status: response.status, body: (await response.json()) as { errors?: Record<string, string[]> } };
  };
  for (const { path, query } of routes) {
    t.equal((await get(path)).status, 200, `${path} answers without a query`);
    for (const unknown of ['meterid', 'cursor_', 'LIMIT']) {
      const refused = await get(`${path}?${unknown}=1`);
      t.equal(refused.status, 422, `${path}?${unknown}`);
      t.same(
        refused.body.errors,
        { [unknown]: [`Unknown query parameter: this list takes ${query.join(', ')}`] },
        `${path}?${unknown}`,
      );
    }
    const beside = await get(`${path}?limit=5&surprise=1`);
    t.same(Object.keys(beside.body.errors ?? {}), ['surprise'], `${path}: beside a known one too`);
    for (const name of query) {
      const repeated = await get(`${path}?${name}=1&${name}=2`);
      t.equal(repeated.status, 422, `${path}?${name} twice`);
      t.same(Object.keys(repeated.body.errors ?? {}), [name], `${path}?${name} twice names it`);
    }
  }
});

t.test('every integer query parameter is plain decimal digits, else a 422 naming it', async (t) => {
  const service = await startTestService(t, { worker: false });
  const customer = await createCustomer(service.db);
  await seedReadings(service.db, customer, [{ meterId: 'Q-1', createdAt: new Date(), reading: '00001.000' }]);
  const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as {
    paths: Record<string, { get?: { parameters?: Array<Parameter & { schema?: { type?: string } }> } }>;
  };
  const integers = Object.entries(document.paths).flatMap(([path, operations]) =>
    (operations.get?.parameters ?? [])
      .filter((parameter) => parameter.in === 'query' && parameter.schema?.type === 'integer')
      .map((parameter) => ({ path: path.replace('{meter_id}', 'Q-1'), name: parameter.name })),
  );
  t.same(
    integers.map(({ path, name }) => `${path}?${name}`).sort(),
    ['/api/meter-readings?limit', '/api/meters/Q-1/readings?limit', '/api/meters?limit'],
    'the integer parameters',
  );

  const get = async (path: string) => {
    const response = await fetch(`${service.url}${path}`, { headers: { authorization: `Bearer ${customer.key}` } });
    return { status: response.status, body: (await response.json()) as { errors?: Record<string, string[]> } };
  };
  for (const { path, name } of integers) {
    t.equal((await get(`${path}?${name}=5`)).status, 200, `${path}?${name}=5`);
    const rule = (await get(`${path}?${name}=0`)).body.errors?.[name]?.[0];
    t.match(rule, /^limit must be an integer from 1 to \d+$/, `${path}?${name}=0: the rule`);
    for (const written of ['0x5', '0b11', '0o7', '1e1', '+5', '-5', '05', ' 5', '5 ', '2.0', '5.', '', '٥']) {
      const refused = await get(`${path}?${name}=${encodeURIComponent(written)}`);
      t.equal(refused.status, 422, `${path}?${name}=${JSON.stringify(written)}`);
      t.same(refused.body.errors, { [name]: [rule] }, `${path}?${name}=${JSON.stringify(written)} names it`);
    }
  }
});
