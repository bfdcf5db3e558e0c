import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { createApiKey } from '../../src/accounts/api-keys.ts';
import {
  type AnomalyJson,
  type AnomalySettings,
  anomalyJson,
  judgeMeter,
  type OpenEpisode,
  STOPPED_MIN_READING_DAYS,
  type TrustedValue,
} from '../../src/meters/anomalies.ts';
import { USUAL_FLOOR_M3 } from '../../src/plausibility-policy.ts';
import { addWebhookEndpoint } from '../../src/webhooks/endpoints.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { startWebhookReceiver } from '../fakes/webhook-receiver.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import { seedReadings } from '../helpers/seed-readings.ts';
import { startTestService, submitPhoto, waitFor, waitForMeter } from '../helpers/service.ts';

const DAY = 86_400_000;
/** The fake model's default answer (test/fakes/http-fake.ts). */
const MODEL_READING = '02390.276';
const start = new Date('2026-01-01T08:00:00Z').getTime();
const settings: AnomalySettings = { stoppedDays: 30, leakDays: 7, leakFactor: 2 };

/**
 * A hand-made history: one trusted reading a day from 100 m³, each day using `use(day)` m³; a day
 * whose use is null has no reading. Newest first, as the check reads it. `decimals`: the counter's
 * fractional wheels (3: a 5 + 3 counter, 0: whole units).
 */
function history(days: number, use: (day: number) => number | null, decimals = 3): TrustedValue[] {
  const values: TrustedValue[] = [];
  let value = 100;
  for (let day = 0; day < days; day++) {
    const used = day === 0 ? 0 : use(day);
    if (used === null) continue;
    value += used;
    values.push(trusted(day, value, decimals));
  }
  return values.reverse();
}

function trusted(day: number, value: number, decimals = 3): TrustedValue {
  const reading = (Math.floor(value * 10 ** decimals) / 10 ** decimals)
    .toFixed(decimals)
    .padStart(decimals ? 6 + decimals : 5, '0');
  return {
    submissionId: String(day + 1),
    referenceId: `ref-${day}`,
    at: new Date(start + day * DAY),
    reading,
    value: Number(reading),
  };
}

/** The check's view of a history whose readings are at most one a day. */
function judge(values: TrustedValue[], open: OpenEpisode[] = []) {
  return judgeMeter({ latest: values.slice(0, 2), daily: values }, open, settings);
}

function kinds(values: TrustedValue[], open: OpenEpisode[] = []) {
  const { opens, closes } = judge(values, open);
  return { opens: opens.map((anomaly) => anomaly.kind), closes };
}

const household = (day: number) => (day % 7 === 0 ? 0.5 : 0.3);
const none = { opens: [], closes: [] };

t.test('steady: a household read daily needs no visit', async (t) => {
  t.same(kinds(history(120, household)), none);
  t.same(kinds(history(120, (day) => (day % 30 === 0 ? 9 : null))), none, 'read monthly');
});

t.test('stopped: used for two months, then standing still while readings keep arriving', async (t) => {
  const values = history(60 + 31, (day) => (day < 60 ? household(day) : 0));
  const { opens } = judge(values);
  t.equal(opens.length, 1);
  t.match(opens[0], {
    kind: 'stopped',
    since: new Date(start + 59 * DAY),
    from: { at: new Date(start + 59 * DAY) },
    to: values[0],
  });
  t.same(anomalyJson(opens[0]!).figures, {
    from_reading: values[0]!.reading,
    to_reading: values[0]!.reading,
    consumption_m3: 0,
    usual_m3_per_day: opens[0]!.usual!.perDay,
    usual_spread_m3_per_day: opens[0]!.usual!.spread,
    usual_m3: Math.round(opens[0]!.usual!.perDay * 31 * 1e6) / 1e6,
    limit_m3: null,
  });
  t.ok(opens[0]!.usual!.perDay > 0.3, `its usual from before it stopped (${opens[0]!.usual!.perDay} m³ a day)`);

  t.same(kinds(history(60 + 29, (day) => (day < 60 ? household(day) : 0))), none, 'not yet the span');
  const twoReadings = history(60 + 31, (day) => (day < 60 ? household(day) : day === 90 ? 0 : null));
  t.same(kinds(twoReadings), none, 'readings must keep arriving: two readings a month apart are no stop');
  t.same(
    kinds(
      history(60 + 31, (day) =>
        day < 60 ? household(day) : day < 60 + STOPPED_MIN_READING_DAYS - 1 || day === 90 ? 0 : null,
      ),
    ),
    { opens: ['stopped'], closes: [] },
    `readings on ${STOPPED_MIN_READING_DAYS} days are enough`,
  );
  const wobbling = history(60 + 31, (day) => (day < 60 ? household(day) : day % 2 ? 0.001 : -0.001));
  t.same(kinds(wobbling), { opens: ['stopped'], closes: [] }, 'a wheel half-way, read either way, stands still');
});

t.test('vacant: a meter that never used anything, or next to nothing, is not stopped', async (t) => {
  t.same(kinds(history(120, () => 0)), none, 'nothing ever used');
  t.same(
    kinds(history(60 + 40, (day) => (day < 60 ? 0.01 : 0))),
    none,
    'a dripping tap before: 0.4 m³ in the time it stood',
  );
  t.same(kinds(history(2 + 40, (day) => (day < 2 ? 0.3 : 0))), none, 'too little history to know its use');
  t.same(
    kinds(history(60 + 40, (day) => (day < 60 ? 0.03 : 0), 0)),
    none,
    'a whole-unit counter may not show the 2 m³ of a slow user',
  );
  t.same(
    kinds(history(60 + 40, (day) => (day < 60 ? 0.3 : 0), 0)),
    { opens: ['stopped'], closes: [] },
    'it would show 12 m³',
  );
});

t.test('backwards: a trusted reading below the one before, by more than a wheel half-way', async (t) => {
  const steady = history(40, household);
  const newest = steady[0]!;
  const dropped = [trusted(41, newest.value - 5), ...steady];
  const { opens } = judge(dropped);
  t.match(opens, [{ kind: 'backwards', since: dropped[0]!.at, from: newest, to: dropped[0] }]);
  t.same(anomalyJson(opens[0]!).figures, {
    from_reading: newest.reading,
    to_reading: dropped[0]!.reading,
    consumption_m3: Math.round((dropped[0]!.value - newest.value) * 1e6) / 1e6,
    usual_m3_per_day: null,
    usual_spread_m3_per_day: null,
    usual_m3: null,
    limit_m3: null,
  });
  t.same(kinds([trusted(41, newest.value - 0.001), ...steady]), none, 'one step down: a wheel half-way');
  t.same(kinds([trusted(41, newest.value - 0.002), ...steady]), { opens: ['backwards'], closes: [] }, 'two steps down');
});

t.test('leaking: far above its usual over the span', async (t) => {
  const leaking = history(61 + 7, (day) => (day <= 60 ? 0.3 : 1));
  const { opens } = judge(leaking);
  t.match(opens, [{ kind: 'leak', since: leaking[7]!.at, from: leaking[7], to: leaking[0] }]);
  const json = anomalyJson(opens[0]!);
  t.same(json.span, { from: leaking[7]!.at.toISOString(), to: leaking[0]!.at.toISOString(), days: 7 });
  t.match(json.figures, {
    consumption_m3: 7,
    usual_m3_per_day: 0.3,
    usual_spread_m3_per_day: 0,
    usual_m3: 2.1,
    limit_m3: 2 * 0.3 * 7 + USUAL_FLOOR_M3,
  });

  t.same(
    kinds(history(61 + 7, (day) => (day <= 60 ? 0.3 : 0.6))),
    none,
    'twice its usual is within the limit (the floor)',
  );
  t.same(
    kinds(history(3 + 7, (day) => (day <= 2 ? 0.3 : 1))),
    none,
    'too little history: no usual of its own to be far from',
  );
  t.same(
    kinds(history(61 + 7, (day) => (day <= 60 ? 0 : 0.5))),
    { opens: ['leak'], closes: [] },
    'a vacant flat that uses water',
  );
  t.same(
    kinds(history(391, (day) => (day % 30 === 0 ? (day === 390 ? 30 : 9) : null))),
    { opens: ['leak'], closes: [] },
    'read monthly: the span is the month since the reading before',
  );
});

t.test('episodes: an open one goes on while its condition holds, and closes when it ends', async (t) => {
  const stoppedAt = (values: TrustedValue[]): OpenEpisode => ({
    kind: 'stopped',
    reading: values[0]!.reading,
    usual: null,
  });
  const stopped = history(60 + 31, (day) => (day < 60 ? household(day) : 0));
  const longer = history(60 + 45, (day) => (day < 60 ? household(day) : 0));
  t.same(kinds(longer, [stoppedAt(stopped)]), none, 'still standing: no second episode');
  const moved = history(60 + 46, (day) => (day < 60 ? household(day) : day === 105 ? 0.2 : 0));
  t.same(kinds(moved, [stoppedAt(stopped)]), { opens: [], closes: ['stopped'] }, 'it moved');

  const leakOpen: OpenEpisode = { kind: 'leak', reading: '', usual: { perDay: 0.3, spread: 0, basis: 'history' } };
  const leakingLong = history(61 + 60, (day) => (day <= 60 ? 0.3 : 1));
  t.same(kinds(leakingLong), none, 'two months on, the leak is its usual by its recent history…');
  t.same(kinds(leakingLong, [leakOpen]), none, '…but the open episode goes on against the usual it opened with');
  const mended = history(61 + 60 + 7, (day) => (day <= 60 ? 0.3 : day <= 120 ? 1 : 0.3));
  t.same(kinds(mended, [leakOpen]), { opens: [], closes: ['leak'] }, 'back to usual over the span');

  const steady = history(40, household);
  const backwardsOpen: OpenEpisode = { kind: 'backwards', reading: '', usual: null };
  const dropped = [trusted(41, steady[0]!.value - 5), ...steady];
  t.same(
    kinds([trusted(42, dropped[0]!.value - 1), ...dropped], [backwardsOpen]),
    none,
    'a further drop: the same episode',
  );
  t.same(
    kinds([trusted(42, dropped[0]!.value + 0.2), ...dropped], [backwardsOpen]),
    { opens: [], closes: ['backwards'] },
    'runs forward again',
  );
  t.same(
    kinds([trusted(42, dropped[0]!.value - 1), ...dropped]),
    { opens: ['backwards'], closes: [] },
    'with none open, a drop opens one',
  );
});

t.test('episodes of real meters: announced once each, closed and opened again, shown and counted', async (t) => {
  const service = await startTestService(t);
  const { db } = service;
  const receiver = await startWebhookReceiver();
  t.teardown(receiver.close);
  const photo = await renderMeterPhoto();
  const client = new DashboardClient(service.url);
  const email = `anomalies.${process.pid}@example.com`;
  t.equal((await client.signUp(email)).status, 303);
  const { account_id: accountId } = await db
    .selectFrom('users')
    .select('account_id')
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  const { id: keyId, key } = await createApiKey(db, { accountId, projectName: 'field app' });
  const customer = { accountId, keyId };
  const watcher = await addWebhookEndpoint(db, service.config, {
    accountId,
    url: `${receiver.url}/anomalies`,
    events: ['meter.anomaly'],
  });
  await addWebhookEndpoint(db, service.config, { accountId, url: `${receiver.url}/readings` });

  const now = Date.now();
  const daysAgo = (days: number) => new Date(now - days * DAY);
  /** Trusted readings written as the read step leaves them: a history that announces nothing by itself. */
  const seed = (meterId: string, from: number, to: number, every: number, value: (daysAgo: number) => number) => {
    const items = [];
    for (let ago = from; ago >= to; ago -= every)
      items.push({ meterId, createdAt: daysAgo(ago), reading: value(ago).toFixed(3).padStart(9, '0') });
    return seedReadings(db, customer, items);
  };
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${service.url}/api${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  const manual = (meterId: string, ago: number, value: number) =>
    api('POST', `/meters/${meterId}/readings`, {
      reading: value.toFixed(3).padStart(9, '0'),
      read_at: daysAgo(ago).toISOString(),
    });
  const submit = async (meterId: string, options: { sync?: boolean } = {}) => {
    const submitted = await submitPhoto(service, {
      key,
      image: photo,
      sync: options.sync,
      fields: { meter_id: meterId },
    });
    if (!options.sync) await waitForMeter(db, submitted.body.reference_id);
    return submitted.body;
  };
  const deliveries = () =>
    db
      .selectFrom('webhook_deliveries')
      .select(['endpoint_id', 'payload'])
      .where('account_id', '=', accountId)
      .where('event_type', '=', 'meter.anomaly')
      .orderBy('id')
      .execute();
  const announced = async (meterId: string) =>
    (await deliveries())
      .map((row) => (row.payload as { data: AnomalyJson & { meter_id: string } }).data)
      .filter((data) => data.meter_id === meterId);
  const listed = async (meterId: string) =>
    (await api('GET', `/meters?meter_id_prefix=${meterId}`)).body.data[0].anomaly;
  const model = (reading: string) =>
    service.model.setBehaviour({ answer: { reading, confidence: 99, unobstructed: true } });

  t.test('stopped while photos keep arriving: one event, signed, whatever number of photos follow', async (t) => {
    // Used 0.5 m³ a day until 40 days ago, then read at the model's reading every 3 days.
    await seed('SN-STOP', 100, 41, 3, (ago) => 2390.276 - (ago - 40) * 0.5);
    await seed('SN-STOP', 40, 4, 3, () => 2390.276);
    t.same(await announced('SN-STOP'), [], 'seeding announces nothing');
    model(MODEL_READING);
    const first = await submit('SN-STOP');
    for (let photos = 0; photos < 3; photos++) await submit('SN-STOP');
    const events = await announced('SN-STOP');
    t.equal(events.length, 1, 'once per episode, not once per photo');
    t.match(events[0], {
      meter_id: 'SN-STOP',
      kind: 'stopped',
      reference_id: first.reference_id,
      span: { to: String, days: Number },
      figures: {
        from_reading: MODEL_READING,
        to_reading: MODEL_READING,
        consumption_m3: 0,
        usual_m3_per_day: 0.5,
        limit_m3: null,
      },
    });
    t.ok(
      events[0]!.span.days >= 36 && events[0]!.span.days < 41,
      `standing since the first reading at its value (${events[0]!.span.days} days)`,
    );

    const [request] = await waitFor(
      async () => receiver.requestsTo('/anomalies'),
      (requests) => requests.length > 0,
    );
    const verified = new Webhook(watcher.secret).verify(request!.body, request!.headers as Record<string, string>) as {
      event: string;
      data: unknown;
    };
    t.equal(verified.event, 'meter.anomaly');
    t.same(verified.data, events[0], 'signed per Standard Webhooks, the data as stored');
    t.match(await listed('SN-STOP'), { kind: 'stopped', since: events[0]!.since }, 'the meters list shows it');
    t.same(
      (await deliveries()).map((row) => row.endpoint_id),
      [watcher.id],
      'only to the endpoint that chose meter.anomaly',
    );

    model('02390.576');
    await submit('SN-STOP', { sync: true });
    t.equal(await listed('SN-STOP'), null, 'it moved: the episode closed');
    t.equal((await announced('SN-STOP')).length, 1, 'closing announces nothing');
  });

  t.test('closing and opening again: a new stop is a new episode; a vacant meter is never one', async (t) => {
    const used = (ago: number) => 100 + (200 - ago) * 0.3;
    await seed('SN-AGAIN', 200, 140, 3, used);
    const flat = used(140);
    for (let ago = 137; ago >= 104; ago -= 3) t.equal((await manual('SN-AGAIN', ago, flat)).status, 201);
    t.match(await announced('SN-AGAIN'), [{ kind: 'stopped', span: { from: daysAgo(140).toISOString() } }]);
    await manual('SN-AGAIN', 101, flat + 1);
    t.equal(await listed('SN-AGAIN'), null);
    await seed('SN-AGAIN', 98, 50, 3, (ago) => flat + 1 + (101 - ago) * 0.3);
    const again = flat + 1 + 51 * 0.3;
    for (let ago = 47; ago >= 14; ago -= 3) await manual('SN-AGAIN', ago, again);
    const events = await announced('SN-AGAIN');
    t.equal(events.length, 2, 'two episodes, two events');
    t.match(events[1], { kind: 'stopped', span: { from: daysAgo(50).toISOString() } });
    const episodes = await db
      .selectFrom('meter_anomalies as a')
      .innerJoin('meter_points as p', 'p.id', 'a.meter_point_id')
      .select(['a.kind', 'a.closed_at'])
      .where('p.external_id', '=', 'SN-AGAIN')
      .orderBy('a.id')
      .execute();
    t.match(episodes, [
      { kind: 'stopped', closed_at: Date },
      { kind: 'stopped', closed_at: null },
    ]);

    await seed('SN-VACANT', 200, 60, 3, () => 42);
    for (let ago = 57; ago >= 3; ago -= 3) await manual('SN-VACANT', ago, 42);
    t.same(await announced('SN-VACANT'), [], 'nothing ever used: vacant, not stopped');
  });

  t.test('backwards: a flagged reading a person confirms; closed when the meter runs on', async (t) => {
    await seed('SN-BACK', 60, 2, 3, (ago) => 2400 - ago * 0.3);
    model(MODEL_READING);
    const dropped = await submit('SN-BACK', { sync: true });
    t.equal(dropped.plausibility.status, 'implausible', 'below the last trusted reading');
    t.same(await announced('SN-BACK'), [], 'a flagged reading is no trusted value');
    t.equal((await api('POST', `/meter-reading/${dropped.reference_id}/confirmation`)).status, 200);
    const events = await announced('SN-BACK');
    t.match(events, [
      {
        kind: 'backwards',
        reference_id: dropped.reference_id,
        figures: {
          from_reading: '02399.100',
          to_reading: MODEL_READING,
          consumption_m3: -8.824,
          usual_m3_per_day: null,
        },
      },
    ]);
    t.match(await listed('SN-BACK'), { kind: 'backwards' });
    const page = await client.get('/dashboard/meters/SN-BACK');
    t.match(page.text, /<h2 id="visit-title">Needs a visit<\/h2>/);
    t.match(page.text, /Ran backwards: <strong>02390\.276<\/strong>/);
    const list = await client.get('/dashboard/meters?prefix=SN-BACK');
    t.match(list.text, /<td data-label="Needs a visit"><span class="badge badge-anomaly">backwards<\/span> since /);

    model('02390.300');
    await submit('SN-BACK', { sync: true });
    t.equal(await listed('SN-BACK'), null, 'the next trusted reading runs on from the new value');
    t.notMatch((await client.get('/dashboard/meters/SN-BACK')).text, /Needs a visit<\/h2>/);
    t.equal((await announced('SN-BACK')).length, 1);
  });

  t.test('leak: manual readings far above usual, announced once, closed when use is usual again', async (t) => {
    await seed('SN-LEAK', 120, 30, 3, (ago) => 500 + (120 - ago) * 0.3);
    const before = 500 + 90 * 0.3;
    await manual('SN-LEAK', 20, before + 10);
    await manual('SN-LEAK', 15, before + 16);
    const events = await announced('SN-LEAK');
    t.match(events, [
      { kind: 'leak', span: { from: daysAgo(30).toISOString(), to: daysAgo(20).toISOString(), days: 10 } },
    ]);
    t.match(events[0]!.figures, { consumption_m3: 10, usual_m3_per_day: 0.3, usual_m3: 3, limit_m3: 2 * 0.3 * 10 + 1 });
    t.match((await client.get('/dashboard/meters/SN-LEAK')).text, /Leak\? <strong>10 m³<\/strong> used in 10 days/);
    await manual('SN-LEAK', 5, before + 17.5);
    t.equal(await listed('SN-LEAK'), null, '1.5 m³ in the 10 days since: usual again');
    t.equal((await announced('SN-LEAK')).length, 1);

    // 10 m³ in the 8 days since the last reading: a photo that is suspicious, until a person confirms it.
    await seed('SN-LEAK-PHOTO', 120, 8, 4, (ago) => 2380.276 - (ago - 8) * 0.3);
    model(MODEL_READING);
    const photographed = await submit('SN-LEAK-PHOTO', { sync: true });
    t.equal(photographed.plausibility.status, 'suspicious');
    t.same(await announced('SN-LEAK-PHOTO'), [], 'not trusted: no episode yet');
    await api('POST', `/meter-reading/${photographed.reference_id}/confirmation`);
    t.match(await announced('SN-LEAK-PHOTO'), [
      { kind: 'leak', reference_id: photographed.reference_id, figures: { consumption_m3: 10 } },
    ]);
  });

  t.test('a burst of readings of one meter at once opens its episode once', async (t) => {
    await seed('SN-BURST', 100, 41, 3, (ago) => 700 + (100 - ago) * 0.4);
    const flat = 700 + 59 * 0.4;
    const statuses = await Promise.all(
      Array.from({ length: 12 }, (_, index) => manual('SN-BURST', 38 - index * 3, flat)),
    );
    t.same(
      statuses.map((response) => response.status),
      Array(12).fill(201),
    );
    t.equal((await announced('SN-BURST')).length, 1);
    t.equal(
      (
        await db
          .selectFrom('meter_anomalies as a')
          .innerJoin('meter_points as p', 'p.id', 'a.meter_point_id')
          .select('a.id')
          .where('p.external_id', '=', 'SN-BURST')
          .execute()
      ).length,
      1,
    );
  });

  t.test('counted in /metrics by kind', async (t) => {
    const text = await (await fetch(`${service.url}/metrics`)).text();
    t.match(text, /^# TYPE meterlens_meter_anomalies_total counter$/m);
    t.match(text, /^meterlens_meter_anomalies_total\{kind="stopped"\} [4-9]$/m, 'SN-STOP, SN-AGAIN twice, SN-BURST');
    t.match(text, /^meterlens_meter_anomalies_total\{kind="backwards"\} [1-9]$/m);
    t.match(text, /^meterlens_meter_anomalies_total\{kind="leak"\} [1-9]$/m);
  });
});
