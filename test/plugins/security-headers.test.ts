import t from 'tap';
import { createCustomer, startTestService } from '../helpers/service.ts';

t.test('API answers are not sniffed or stored; HSTS only on a request that came over https', async (t) => {
  const service = await startTestService(t, { worker: false });
  const { key } = await createCustomer(service.db);
  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${service.url}${path}`, { headers: { authorization: `Bearer ${key}`, ...headers } });

  for (const [name, response] of [
    ['a list', await get('/api/meter-readings')],
    ['a refused key', await get('/api/meter-readings', { authorization: 'Bearer nope' })],
    ['an unknown route', await get('/api/nothing')],
    ['the OpenAPI document', await get('/openapi.json')],
  ] as const) {
    t.equal(response.headers.get('x-content-type-options'), 'nosniff', `${name}: nosniff`);
    t.equal(response.headers.get('cache-control'), 'no-store', `${name}: no-store`);
    t.equal(response.headers.get('strict-transport-security'), null, `${name}: no HSTS over http`);
  }

  // The test's loopback client is a trusted proxy under the default TRUST_PROXY=private.
  const proxied = await get('/api/meter-readings', { 'x-forwarded-proto': 'https' });
  t.equal(
    proxied.headers.get('strict-transport-security'),
    'max-age=31536000',
    'HSTS behind a trusted proxy that says https',
  );

  const asset = await fetch(`${service.url}/dashboard/assets/dashboard.css`);
  t.equal(
    asset.headers.get('cache-control'),
    'public, max-age=3600',
    'a route that says how it may be cached keeps its own',
  );
  t.equal(asset.headers.get('x-content-type-options'), 'nosniff');
});

t.test('an untrusted client cannot claim https', async (t) => {
  const service = await startTestService(t, { worker: false, env: { TRUST_PROXY: 'none' } });
  const response = await fetch(`${service.url}/healthz`, { headers: { 'x-forwarded-proto': 'https' } });
  t.equal(response.status, 200);
  t.equal(response.headers.get('strict-transport-security'), null);
  t.equal(response.headers.get('cache-control'), 'no-store');
});
