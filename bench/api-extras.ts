// Cost of issue 13b's steps, one request at a time: the 202 ack without and with a new Idempotency-Key, a replay,
// GET by reference and a list page. Needs DATABASE_URL (a test database is cloned and dropped).
import { createCustomer, startTestService, submitPhoto } from '../test/helpers/service.ts';
import { renderMeterPhoto } from '../test/fakes/meter-photo.ts';
const teardowns: Array<() => Promise<unknown>> = [];
const service = await startTestService({ teardown: (fn: () => Promise<unknown>) => teardowns.push(fn) } as never, {
  worker: false,
});
const customer = await createCustomer(service.db, { monthlyLimit: 100000 });
const photo = await renderMeterPhoto();
const N = 150;
async function p50(name: string, run: (i: number) => Promise<unknown>) {
  for (let i = 0; i < 10; i++) await run(-1 - i);
  const times: number[] = [];
  for (let i = 0; i < N; i++) {
    const s = performance.now();
    await run(i);
    times.push(performance.now() - s);
  }
  times.sort((a, b) => a - b);
  console.log(
    `${name}: p50 ${times[Math.floor(N / 2)].toFixed(1)} ms, p90 ${times[Math.floor(N * 0.9)].toFixed(1)} ms (n=${N})`,
  );
}
await p50('POST async, no key', () => submitPhoto(service, { key: customer.key, image: photo }));
await p50('POST async, new key', (i) =>
  submitPhoto(service, { key: customer.key, image: photo, headers: { 'idempotency-key': `k-${i}-${Math.random()}` } }),
);
await submitPhoto(service, { key: customer.key, image: photo, headers: { 'idempotency-key': 'replay' } });
await p50('POST async, replay', () =>
  submitPhoto(service, { key: customer.key, image: photo, headers: { 'idempotency-key': 'replay' } }),
);
const ref = (await submitPhoto(service, { key: customer.key, image: photo })).body.reference_id;
const auth = { authorization: `Bearer ${customer.key}` };
await p50('GET /api/meter-reading/{id}', () =>
  fetch(`${service.url}/api/meter-reading/${ref}`, { headers: auth }).then((r) => r.json()),
);
await p50('GET /api/meter-readings?limit=100', () =>
  fetch(`${service.url}/api/meter-readings?limit=100`, { headers: auth }).then((r) => r.json()),
);
for (const fn of teardowns.reverse()) await fn();
