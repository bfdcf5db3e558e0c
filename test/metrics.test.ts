import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { buildMetricsServer } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { WEBHOOK_EVENTS } from '../src/webhooks/events.ts';
import { newWebhookSecret } from '../src/webhooks/signature.ts';
import { renderMeterPhoto } from './fakes/meter-photo.ts';
import { startWebhookReceiver } from './fakes/webhook-receiver.ts';
import { createCustomer, startTestService, submitPhoto, waitFor, waitForMeter } from './helpers/service.ts';

const METRICS_TOKEN = 'scrape-secret';
const service = await startTestService(t, { env: { METRICS_TOKEN } });
const receiver = await startWebhookReceiver();
t.teardown(receiver.close);

async function scrape(authorization?: string) {
  const response = await fetch(`${service.url}/metrics`, { headers: authorization ? { authorization } : {} });
  return { status: response.status, contentType: response.headers.get('content-type'), text: await response.text() };
}

/** The value of one sample line, e.g. `meterlens_acks_total{mode="async"}`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

t.test('GET /metrics: every family, with the work just done counted', async (t) => {
  const customer = await createCustomer(service.db, { monthlyLimit: 1 });
  await service.db
    .insertInto('webhook_endpoints')
    .values({
      account_id: customer.accountId,
      url: `${receiver.url}/hook`,
      secret: newWebhookSecret(),
      events: [...WEBHOOK_EVENTS],
      disabled_reason: null,
    })
    .execute();
  const accepted = await submitPhoto(service, { key: customer.key, image: await renderMeterPhoto() });
  t.equal(accepted.status, 202);
  t.equal(
    (await submitPhoto(service, { key: customer.key, image: await renderMeterPhoto() })).status,
    422,
    'past the limit',
  );
  t.equal((await waitForMeter(service.db, accepted.body.reference_id)).status, 'completed');
  // reading.completed and usage.limit_reached
  t.equal(
    await waitFor(
      async () => receiver.received.length,
      (count) => count >= 2,
    ),
    2,
  );

  const { status, contentType, text } = await scrape(`Bearer ${METRICS_TOKEN}`);
  t.equal(status, 200);
  t.match(contentType, /^text\/plain; version=0\.0\.4/);
  const families: Array<[string, string]> = [
    ['meterlens_http_request_duration_seconds', 'histogram'],
    ['meterlens_acks_total', 'counter'],
    ['meterlens_usage_refusals_total', 'counter'],
    ['meterlens_readings_total', 'counter'],
    ['meterlens_readings_escalated_total', 'counter'],
    ['meterlens_reading_confidence', 'histogram'],
    ['meterlens_reader_attempt_duration_seconds', 'histogram'],
    ['meterlens_webhook_attempt_duration_seconds', 'histogram'],
    ['meterlens_meter_anomalies_total', 'counter'],
    ['meterlens_queue_jobs', 'gauge'],
    ['meterlens_queue_oldest_job_age_seconds', 'gauge'],
    ['meterlens_process_cpu_seconds_total', 'counter'],
  ];
  for (const [name, type] of families) t.ok(text.includes(`# TYPE ${name} ${type}\n`), `${name} is a ${type}`);

  t.ok(sample(text, 'meterlens_acks_total{mode="async"}')! >= 1, 'the ack is counted');
  t.match(text, /^meterlens_usage_refusals_total\{plan="test_plan_\d+_\d+"\} [1-9]/m, 'the refusal, by plan');
  t.match(text, /^meterlens_readings_total\{reader="openai",outcome="completed"\} [1-9]/m);
  t.match(text, /^meterlens_reading_confidence_count\{reader="openai"\} [1-9]/m);
  t.match(text, /^meterlens_reader_attempt_duration_seconds_count\{reader="openai",outcome="accepted"\} [1-9]/m);
  t.match(text, /^meterlens_webhook_attempt_duration_seconds_count\{outcome="delivered"\} [1-9]/m);
  t.match(
    text,
    /^meterlens_http_request_duration_seconds_count\{method="POST",route="\/api\/meter-reading",status="202"\} [1-9]/m,
    'by route pattern',
  );
  t.match(
    text,
    /^meterlens_http_request_duration_seconds_bucket\{le="0\.5",method="POST",route="\/api\/meter-reading",status="422"\} /m,
  );
  t.equal(
    sample(text, 'meterlens_queue_jobs{queue="read-meter",state="completed"}'),
    1,
    'queue depth read from pg-boss',
  );
  t.equal(
    sample(text, 'meterlens_queue_jobs{queue="deliver-webhook",state="failed"}'),
    0,
    'empty states are reported as 0',
  );
  t.ok(sample(text, 'meterlens_queue_oldest_job_age_seconds{queue="read-meter",state="completed"}')! >= 0);

  const dashboard = readFileSync(path.join(import.meta.dirname, '..', 'ops', 'grafana-dashboard.json'), 'utf8');
  const charted = new Set(
    [...dashboard.matchAll(/meterlens_[a-z0-9_]+/g)].map(([name]) => name.replace(/_(bucket|count|sum)$/, '')),
  );
  for (const name of charted)
    t.match(text, new RegExp(`^# TYPE ${name} `, 'm'), `the Grafana dashboard's ${name} is served`);
});

t.test('with METRICS_TOKEN, a scrape without the token is refused', async (t) => {
  for (const authorization of [undefined, 'Bearer wrong', `bearer ${METRICS_TOKEN}`]) {
    const response = await scrape(authorization);
    t.equal(response.status, 401, String(authorization));
    t.same(JSON.parse(response.text), {
      errors: { authorization: ['Metrics need Authorization: Bearer <METRICS_TOKEN>'] },
    });
  }
});

t.test("the worker's metrics server: without a token, loopback clients only", async (t) => {
  const server = await buildMetricsServer({ config: loadConfig({ TRUST_PROXY: 'none' }), db: service.db });
  t.teardown(() => server.close());
  const local = await server.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
  t.equal(local.statusCode, 200);
  t.match(local.body, /# TYPE meterlens_queue_jobs gauge/);
  const remote = await server.inject({ method: 'GET', url: '/metrics', remoteAddress: '10.1.2.3' });
  t.equal(remote.statusCode, 403);
  t.match(remote.json(), { errors: { authorization: [/loopback clients only/] } });
  t.equal(
    (await server.inject({ method: 'GET', url: '/', remoteAddress: '127.0.0.1' })).statusCode,
    404,
    'nothing else is served',
  );
});

t.test(
  'without a token, under the default TRUST_PROXY (private): the connection must be loopback, and not forwarded',
  async (t) => {
    const server = await buildMetricsServer({ config: loadConfig({}), db: service.db });
    t.teardown(() => server.close());
    const url = `${await server.listen({ port: 0, host: '127.0.0.1' })}/metrics`;

    const direct = await fetch(url);
    t.equal(direct.status, 200, 'a scrape straight to loopback is answered');
    t.match(await direct.text(), /# TYPE meterlens_queue_jobs gauge/);

    const forged = await server.inject({
      method: 'GET',
      url: '/metrics',
      remoteAddress: '10.1.2.3',
      headers: { 'x-forwarded-for': '127.0.0.1' },
    });
    t.equal(forged.statusCode, 403, 'a private, so trusted, address claiming to forward for loopback is refused');
    t.match(forged.json(), { errors: { authorization: [/loopback clients only, not through a proxy/] } });

    // A reverse proxy on the same host connects from loopback: what it forwards comes from whoever reached it.
    const forwardedHeaders: Array<Record<string, string>> = [
      { 'x-forwarded-for': '127.0.0.1' },
      { 'x-forwarded-for': '203.0.113.7' },
      { forwarded: 'for=127.0.0.1' },
    ];
    for (const headers of forwardedHeaders) {
      t.equal((await fetch(url, { headers })).status, 403, JSON.stringify(headers));
    }
  },
);
