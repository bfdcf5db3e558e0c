import t from 'tap';
import { accountUsage } from '../../src/dashboard/usage.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { createCustomer, startTestService, submitPhoto } from '../helpers/service.ts';

t.test('the usage chart counts photos submitted, not readings people entered', async (t) => {
  const service = await startTestService(t, { worker: false });
  const customer = await createCustomer(service.db);
  const manual = await fetch(`${service.url}/api/meters/M1/readings`, {
    method: 'POST',
    headers: { authorization: `Bearer ${customer.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ reading: '00100.000', read_at: new Date(Date.now() - 3_600_000).toISOString() }),
  });
  t.equal(manual.status, 201);
  const total = async () => {
    const usage = await accountUsage(service.db, customer.accountId);
    return { month: usage.monthCount, chart: usage.daily.reduce((sum, day) => sum + day.count, 0) };
  };
  t.same(await total(), { month: 0, chart: 0 });
  t.equal((await submitPhoto(service, { key: customer.key, image: await renderMeterPhoto() })).status, 202);
  t.same(await total(), { month: 1, chart: 1 });
});
