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
