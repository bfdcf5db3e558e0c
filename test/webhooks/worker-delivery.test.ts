import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../src/config.ts';
import { createDatabase } from '../../src/db/database.ts';
import { notify } from '../../src/pipeline/notify.ts';
import { createBoss, QUEUES, type DeliverWebhookJob } from '../../src/queue.ts';
import { deliverWebhook } from '../../src/webhooks/deliver.ts';
import { addWebhookEndpoint } from '../../src/webhooks/endpoints.ts';
import { startWebhookReceiver } from '../fakes/webhook-receiver.ts';
import { createTestDatabase } from '../helpers/database.ts';

t.test('a notified event reaches the receiver through the deliver-webhook queue', async (t) => {
  const database = await createTestDatabase();
  t.teardown(database.drop);
  const db = createDatabase(database.url);
  t.teardown(() => db.destroy());
  const config = loadConfig({ WEBHOOK_ALLOW_PRIVATE: '1' });
  const boss = createBoss(database.url, config);
  await boss.start();
  t.teardown(() => boss.stop({ graceful: false }));
  let handled!: () => void;
  const jobDone = new Promise<void>((resolve) => (handled = resolve));
  // As the worker registers it, plus a signal once the attempt is recorded.
  await boss.work<DeliverWebhookJob>(QUEUES.deliverWebhook, async ([job]) => {
    await deliverWebhook({ db, boss, config }, job.data.deliveryId);
    handled();
  });

  const receiver = await startWebhookReceiver(200);
  t.teardown(receiver.close);

  const accountId = (
    await db.insertInto('accounts').values({ name: 'Waterworks' }).returning('id').executeTakeFirstOrThrow()
  ).id;
  const apiKey = await db
    .insertInto('api_keys')
    .values({
      account_id: accountId,
      project_name: 'Test',
      key_sha256: 'b'.repeat(64),
      display_prefix: 'ml_',
      display_suffix: 'bbbb',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const meter = await db
    .insertInto('submissions')
    .values({
      account_id: accountId,
      api_key_id: apiKey.id,
      mode: 'async',
      error_code: null,
      error_message: null,
      started_at: null,
      finished_at: null,
    })
    .returning(['id', 'reference_id'])
    .executeTakeFirstOrThrow();
  const { secret } = await addWebhookEndpoint(db, config, {
    accountId,
    url: `${receiver.url}/hook`,
  });
  await db.transaction().execute((tx) =>
    notify(tx, boss, {
      status: 'failed',
      submissionId: meter.id,
      accountId,
      referenceId: meter.reference_id,
      error: { code: 'unreadable', message: 'No digits' },
    }),
  );

  const [request] = await receiver.waitFor(1);
  t.match(new Webhook(secret).verify(request.body, request.headers as Record<string, string>), {
    event: 'reading.failed',
    data: { reference_id: meter.reference_id, error: { code: 'unreadable' } },
  });
  await jobDone;
  const delivery = await db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('submission_id', '=', meter.id)
    .executeTakeFirstOrThrow();
  t.match(delivery, { status: 'delivered', attempt_count: 1, last_status_code: 200 }, 'recorded by the queue handler');
});
