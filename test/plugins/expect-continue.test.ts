import t from 'tap';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { BOUNDARY, multipartBody, RawConnection, requestHead } from '../helpers/raw-http.ts';
import { createCustomer, startTestService, submitPhoto, type TestService } from '../helpers/service.ts';

const photo = await renderMeterPhoto();
const upload = multipartBody([{ name: 'image', filename: 'meter.jpg', contentType: 'image/jpeg', body: photo }]);

/** Sends the head of a photo upload with `Expect: 100-continue`, and nothing of its body. */
async function expectContinue(
  service: TestService,
  authorization: string,
  headers: Record<string, string> = {},
): Promise<RawConnection> {
  const connection = await RawConnection.open(service.url);
  connection.write(
    requestHead('POST', '/api/meter-reading', {
      Authorization: authorization,
      'Content-Type': `multipart/form-data; boundary=${BOUNDARY}`,
      'Content-Length': String(upload.length),
      Expect: '100-continue',
      ...headers,
    }),
  );
  return connection;
}

t.test('Expect: 100-continue', async (t) => {
  const service = await startTestService(t, { worker: false });

  t.test('a request that passes the header checks gets 100 Continue, then its answer', async (t) => {
    const customer = await createCustomer(service.db);
    const connection = await expectContinue(service, `Bearer ${customer.key}`);
    t.teardown(() => connection.close());
    t.equal((await connection.response(5000)).status, 100);
    connection.write(upload);
    t.equal((await connection.response(5000)).status, 202);
  });

  t.test(
    'a request refused from its headers gets its final answer instead of 100 Continue, and sends no body',
    async (t) => {
      const customer = await createCustomer(service.db);
      const expired = await createCustomer(service.db, { subscription: 'expired' });
      const overLimit = await createCustomer(service.db, { monthlyLimit: 0 });
      const cases: Array<[string, string, Record<string, string>, string]> = [
        ['an unknown API key', `Bearer meterlens_live_${'0'.repeat(32)}`, {}, 'authorization'],
        ['an expired subscription', `Bearer ${expired.key}`, {}, 'subscription'],
        ['the monthly limit reached', `Bearer ${overLimit.key}`, {}, 'usage'],
        [
          'the monthly limit reached, with a new Idempotency-Key',
          `Bearer ${overLimit.key}`,
          { 'Idempotency-Key': 'new' },
          'usage',
        ],
        ['a malformed Idempotency-Key', `Bearer ${customer.key}`, { 'Idempotency-Key': 'é' }, 'idempotency'],
      ];
      for (const [name, authorization, headers, field] of cases) {
        const connection = await expectContinue(service, authorization, headers);
        const answer = await connection.response(5000);
        t.equal(answer.status, 422, `${name}: the first answer is the refusal`);
        t.same(Object.keys(JSON.parse(answer.body).errors), [field], name);
        t.equal(answer.headers.connection, 'close', `${name}: the connection is closed, as the body never came`);
        connection.close();
      }
    },
  );

  t.test('over the limit, a retry of an accepted request gets 100 Continue and its replay', async (t) => {
    const customer = await createCustomer(service.db, { monthlyLimit: 1 });
    const first = await submitPhoto(service, {
      key: customer.key,
      image: photo,
      headers: { 'idempotency-key': 'the-one' },
    });
    t.equal(first.status, 202);
    const connection = await expectContinue(service, `Bearer ${customer.key}`, { 'Idempotency-Key': 'the-one' });
    t.teardown(() => connection.close());
    t.equal((await connection.response(5000)).status, 100);
    connection.write(upload);
    const retry = await connection.response(5000);
    t.match(retry, { status: 202, headers: { 'idempotent-replayed': 'true' } });
    t.same(JSON.parse(retry.body), first.body);
  });

  t.test('a route that parses its body gets 100 Continue once its checks pass', async (t) => {
    const customer = await createCustomer(service.db);
    const body = JSON.stringify({ max_flow_m3_per_hour: 2 });
    const connection = await RawConnection.open(service.url);
    t.teardown(() => connection.close());
    connection.write(
      requestHead('PATCH', '/api/meters/SN-1', {
        Authorization: `Bearer ${customer.key}`,
        'Content-Type': 'application/json',
        'Content-Length': String(body.length),
        Expect: '100-continue',
      }),
    );
    t.equal((await connection.response(5000)).status, 100);
    connection.write(body);
    t.match(await connection.response(5000), { status: 200, body: /"max_flow_m3_per_hour":2/ });
  });
});
