import t from 'tap';
import { queueEvent, sendTestEvent } from '../../src/webhooks/deliver.ts';
import { addWebhookEndpoint } from '../../src/webhooks/endpoints.ts';
import { startWebhookReceiver, type Answer } from '../fakes/webhook-receiver.ts';
import { createCustomer, startTestService, waitFor } from '../helpers/service.ts';

const neverAnswers: Answer = () => {};

t.test("a receiver that never answers does not delay another account's webhooks", async (t) => {
  const service = await startTestService(t, { env: { WEBHOOK_TIMEOUT_MS: '3000' } });
  const receiver = await startWebhookReceiver();
  t.teardown(receiver.close);
  const slowEvents = 24;
  receiver.answer('/slow', ...Array<Answer>(slowEvents * 2).fill(neverAnswers));
  const [slowAccount, otherAccount] = [await createCustomer(service.db), await createCustomer(service.db)];
  const slow = await addWebhookEndpoint(service.db, service.config, {
    accountId: slowAccount.accountId,
    url: `${receiver.url}/slow`,
  });
  const other = await addWebhookEndpoint(service.db, service.config, {
    accountId: otherAccount.accountId,
    url: `${receiver.url}/other`,
  });

  // Queued as any event is: test events are limited per endpoint and minute.
  await service.db.transaction().execute(async (tx) => {
    for (let i = 0; i < slowEvents; i++) {
      await queueEvent(tx, service.boss, { type: 'reading.completed', data: { index: i }, submissionId: null }, (eb) =>
        eb('id', '=', slow.id),
      );
    }
  });
  await waitFor(
    async () => receiver.requestsTo('/slow').length,
    (count) => count > 0,
  );
  const sentAt = Date.now();
  await sendTestEvent(service.db, service.boss, otherAccount.accountId, String(other.id));
  const [delivered] = await waitFor(
    async () => receiver.requestsTo('/other'),
    (requests) => requests.length > 0,
    60_000,
  );

  const delayMs = delivered.receivedAt - sentAt;
  t.ok(delayMs < 1000, `the other account's webhook arrived ${delayMs} ms after it was sent`);
  t.ok(
    receiver.requestsTo('/slow').length <= service.config.webhookEndpointConcurrency,
    'the silent receiver holds at most its share of attempts',
  );
});
