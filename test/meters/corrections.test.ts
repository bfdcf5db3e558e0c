import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { CORRECTIONS_PER_SUBMISSION } from '../../src/meters/corrections.ts';
import { addWebhookEndpoint } from '../../src/webhooks/endpoints.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { startWebhookReceiver } from '../fakes/webhook-receiver.ts';
import { createCustomer, startTestService, submitPhoto } from '../helpers/service.ts';

t.test(
  'a correction or confirmation through the API sends reading.corrected: signed, with the machine’s and the person’s reading',
  async (t) => {
    const service = await startTestService(t);
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    const customer = await createCustomer(service.db);
    const chose = await addWebhookEndpoint(service.db, service.config, {
      accountId: customer.accountId,
      url: `${receiver.url}/corrections`,
      events: ['reading.corrected'],
    });
    await addWebhookEndpoint(service.db, service.config, {
      accountId: customer.accountId,
      url: `${receiver.url}/results`,
    });
    const photo = await renderMeterPhoto();
    const submit = async () =>
      (await submitPhoto(service, { key: customer.key, image: photo, sync: true, fields: { meter_id: 'C-1' } })).body;
    const api = (path: string, body?: unknown) =>
      fetch(`${service.url}/api${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${customer.key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
    const read = await submit();
    service.model.setBehaviour({ answer: { reading: '', confidence: 0, unobstructed: false } });
    const unreadable = await submit();
    service.model.setBehaviour({});

    const corrected = await api(`/meter-reading/${read.reference_id}/correction`, { reading: '02390.300' });
    t.equal(corrected.status, 200);
    t.equal((await api(`/meter-reading/${unreadable.reference_id}/correction`, { reading: '02390.400' })).status, 200);
    t.equal((await api(`/meter-reading/${read.reference_id}/confirmation`)).status, 200);
    await receiver.waitFor(3);
    const events = receiver.received.map((webhook) => {
      t.equal(webhook.path, '/corrections', 'only to the endpoint that chose the event');
      return new Webhook(chose.secret).verify(webhook.body, webhook.headers as Record<string, string>) as {
        event: string;
        data: Record<string, unknown>;
      };
    });
    // Deliveries to one endpoint may run side by side: found by what each says, not by arrival.
    const withCorrection = (reading: string) =>
      events.find((event) => (event.data.correction as { reading: string }).reading === reading);
    t.match(withCorrection('02390.300'), {
      event: 'reading.corrected',
      data: {
        reference_id: read.reference_id,
        status: 'completed',
        reading: '02390.276',
        meter_id: 'C-1',
        needs_review: false,
        correction: { reading: '02390.300', corrected_by: `api key ${customer.keyId}` },
      },
    });
    t.same(
      withCorrection('02390.300')!.data,
      await corrected.json(),
      'the data is the submission as the correction answered it',
    );
    t.match(
      withCorrection('02390.276'),
      { event: 'reading.corrected', data: { reference_id: read.reference_id, reading: '02390.276' } },
      'a confirmation',
    );
    t.match(withCorrection('02390.400'), {
      event: 'reading.corrected',
      data: {
        reference_id: unreadable.reference_id,
        status: 'failed',
        error: { code: 'unreadable' },
        needs_review: false,
      },
    });

    // A correction refused is no event: the event is committed with the correction or not at all.
    const row = await service.db
      .selectFrom('submissions')
      .select('id')
      .where('reference_id', '=', read.reference_id)
      .executeTakeFirstOrThrow();
    await sql`INSERT INTO reading_corrections (submission_id, reading, value, corrected_by)
    SELECT ${row.id}, '1', 1, 'test' FROM generate_series(1, ${CORRECTIONS_PER_SUBMISSION - 2})`.execute(service.db);
    t.equal(
      (await api(`/meter-reading/${read.reference_id}/correction`, { reading: '02390.500' })).status,
      422,
      'past the corrections bound',
    );
    const { count } = await service.db
      .selectFrom('webhook_deliveries')
      .select(sql<number>`count(*)::int`.as('count'))
      .where('event_type', '=', 'reading.corrected')
      .executeTakeFirstOrThrow();
    t.equal(count, 3, 'no delivery for the refused correction');
  },
);

t.test("a correction is held to the meter's layout, but for the value it replaces", async (t) => {
  const service = await startTestService(t);
  const customer = await createCustomer(service.db);
  const photo = await renderMeterPhoto();
  const submit = async (meterId: string) =>
    (await submitPhoto(service, { key: customer.key, image: photo, sync: true, fields: { meter_id: meterId } })).body;
  const correct = async (referenceId: string, reading: string) => {
    const response = await fetch(`${service.url}/api/meter-reading/${referenceId}/correction`, {
      method: 'POST',
      headers: { authorization: `Bearer ${customer.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reading }),
    });
    return { status: response.status, body: await response.json() };
  };

  await submit('L-1');
  const second = await submit('L-1');
  t.match(second, { reading: '02390.276' }, 'the fake reads 5 + 3');
  t.match(
    await correct(second.reference_id, '02390'),
    {
      status: 422,
      body: { errors: { reading: [/^Meter L-1: 02390 has 5 whole and 0 fractional wheels; the meter has 5 and 3/] } },
    },
    'a wheel dropped by a typo, refused while the first reading shows 5 + 3',
  );
  t.equal((await correct(second.reference_id, '02390.300')).status, 200);

  const only = await submit('L-2');
  t.equal((await correct(only.reference_id, '02390')).status, 200, 'the value that showed 5 + 3 was the one corrected');
  const manual = await fetch(`${service.url}/api/meters/L-2/readings`, {
    method: 'POST',
    headers: { authorization: `Bearer ${customer.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ reading: '02391', read_at: new Date().toISOString() }),
  });
  t.equal(manual.status, 201, 'the meter is 5 + 0 now, as the correction shows');
});
