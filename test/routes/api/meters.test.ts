import { sql } from 'kysely';
import t from 'tap';
import { CORRECTIONS_PER_SUBMISSION } from '../../../src/meters/corrections.ts';
import { METER_POINTS_PER_ACCOUNT } from '../../../src/meters/meter-points.ts';
import { refreshNeedsReview, setReviewSettings } from '../../../src/meters/review.ts';
import { addWebhookEndpoint } from '../../../src/webhooks/endpoints.ts';
import { renderMeterPhoto } from '../../fakes/meter-photo.ts';
import { startWebhookReceiver } from '../../fakes/webhook-receiver.ts';
import { seedReadings } from '../../helpers/seed-readings.ts';
import { createCustomer, startTestService, waitForMeter } from '../../helpers/service.ts';

/** The fake model's default answer (test/fakes/http-fake.ts). */
const MODEL_READING = '02390.276';

t.test('meter identity, plausibility, history and corrections', async (t) => {
  const service = await startTestService(t);
  const photo = await renderMeterPhoto();

  /** Submits the photo with text fields, before and after the file as a client may send them. */
  async function submit(
    key: string,
    fields: Record<string, string>,
    options: { sync?: boolean; fieldsAfterImage?: boolean } = {},
  ) {
    const form = new FormData();
    const append = () => Object.entries(fields).forEach(([name, value]) => form.append(name, value));
    if (!options.fieldsAfterImage) append();
    form.append('image', new Blob([photo]), 'meter.jpg');
    if (options.fieldsAfterImage) append();
    const response = await fetch(`${service.url}/api/meter-reading${options.sync === false ? '' : '/sync'}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    return { status: response.status, body: (await response.json()) as any };
  }

  async function api(key: string, method: string, path: string, body?: unknown) {
    const response = await fetch(`${service.url}/api${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  }

  t.test(
    'bad meter_id, previous_reading and previous_read_at get a 422 naming the field, and are not counted',
    async (t) => {
      const customer = await createCustomer(service.db, { monthlyLimit: 1 });
      const cases: Array<[Record<string, string>, string]> = [
        [{ meter_id: '' }, 'meter_id'],
        [{ meter_id: 'x'.repeat(65) }, 'meter_id'],
        [{ meter_id: 'flat 3' }, 'meter_id'],
        [{ meter_id: 'zähler' }, 'meter_id'],
        [{ previous_reading: 'abc' }, 'previous_reading'],
        [{ previous_reading: '-5' }, 'previous_reading'],
        [{ previous_reading: '1.2.3' }, 'previous_reading'],
        [{ previous_reading: '9'.repeat(2000) }, 'previous_reading'],
        [{ previous_reading: '606', previous_read_at: 'yesterday' }, 'previous_read_at'],
        [{ previous_reading: '606', previous_read_at: '2026-11-01T08:00' }, 'previous_read_at'],
        [{ previous_reading: '606', previous_read_at: '2026-02-30' }, 'previous_read_at'],
        [{ previous_reading: '606', previous_read_at: '0000-01-01' }, 'previous_read_at'],
        [{ previous_reading: '606', previous_read_at: '2016-12-31T23:59:60Z' }, 'previous_read_at'],
        [
          { previous_reading: '606', previous_read_at: new Date(Date.now() + 86_400_000).toISOString() },
          'previous_read_at',
        ],
        [{ previous_read_at: '2026-11-01T08:00:00Z' }, 'previous_read_at'],
      ];
      for (const [fields, field] of cases) {
        for (const sync of [true, false]) {
          const response = await submit(customer.key, fields, { sync });
          t.equal(response.status, 422, `${JSON.stringify(fields).slice(0, 60)} (${sync ? 'sync' : 'async'})`);
          t.same(Object.keys(response.body.errors), [field]);
        }
      }
      const accepted = await submit(
        customer.key,
        { meter_id: 'SN-1/a:b.c_d', previous_reading: '2390', previous_read_at: '2026-11-01' },
        { fieldsAfterImage: true },
      );
      t.equal(
        accepted.status,
        200,
        'valid fields are accepted, after the file too; the refusals did not use up the limit of 1',
      );
      t.equal(accepted.body.meter_id, 'SN-1/a:b.c_d');
    },
  );

  t.test('the window comes from the last reading, then from previous_reading and corrections', async (t) => {
    const customer = await createCustomer(service.db);
    const first = await submit(customer.key, { meter_id: 'M1' });
    t.equal(first.status, 200);
    t.same(
      first.body.plausibility,
      { status: 'unknown', reference: null, reference_source: null, reference_submission: null, window: null },
      'no history: unknown',
    );

    const second = await submit(customer.key, { meter_id: 'M1' });
    t.same(
      second.body.plausibility,
      {
        status: 'ok',
        reference: MODEL_READING,
        reference_source: 'reading',
        reference_submission: first.body.reference_id,
        window: { min: 2390.275, max: 2392.776, usual_max: 2390.276 + 3 * 1.5 + 1 },
      },
      "the last reading is the reference; one red-wheel step below, one hour of 2.5 m³/h above; a day of three times a household's 1.5 m³ and 1 m³ is usual",
    );
    t.equal(second.body.confidence, 97);

    const implausible = await submit(customer.key, { meter_id: 'M1', previous_reading: '2400.5' });
    t.match(
      implausible.body,
      {
        confidence: 20,
        plausibility: {
          status: 'implausible',
          reference: '2400.5',
          reference_source: 'previous_reading',
          reason: /below the reference reading 2400\.5/,
        },
      },
      "a reading below the client's previous reading is implausible, its confidence capped",
    );

    const afterImplausible = await submit(customer.key, { meter_id: 'M1' });
    t.match(
      afterImplausible.body.plausibility,
      { status: 'implausible', reference: '2400.5', reference_source: 'previous_reading' },
      'an implausible reading is no reference: the previous_reading it came with is',
    );

    const replaced = await submit(customer.key, {
      meter_id: 'M1',
      previous_reading: '2390',
      previous_read_at: new Date(Date.now() - 3_600_000).toISOString(),
    });
    t.match(
      replaced.body.plausibility,
      { status: 'ok', reference: '2390', window: { min: 2389 } },
      'a previous_reading below the last reading resets the reference (meter replaced); whole units: one unit of tolerance',
    );

    const correction = await api(customer.key, 'POST', `/meter-reading/${replaced.body.reference_id}/correction`, {
      reading: '02390.100',
    });
    t.equal(correction.status, 200);
    t.match(
      correction.body,
      {
        reference_id: replaced.body.reference_id,
        meter_id: 'M1',
        reading: MODEL_READING,
        value: 2390.276,
        correction: {
          reading: '02390.100',
          value: 2390.1,
          corrected_by: `api key ${customer.keyId}`,
          corrected_at: String,
        },
      },
      'the machine reading stays beside the correction',
    );
    const { body: result } = await api(customer.key, 'GET', `/meter-reading/${replaced.body.reference_id}`);
    t.same(result, correction.body, 'GET shows the submission as the correction response does, correction included');
    const { body: listed } = await api(customer.key, 'GET', '/meter-readings?limit=1');
    t.same(listed.data, [correction.body], 'and so does the list');
    const afterCorrection = await submit(customer.key, { meter_id: 'M1' });
    t.match(
      afterCorrection.body.plausibility,
      { status: 'ok', reference: '02390.100', reference_source: 'correction' },
      'the corrected value is the next reference',
    );

    const other = await submit(customer.key, { meter_id: 'M2' });
    t.equal(other.body.plausibility.status, 'unknown', 'each meter has its own history');
    const anonymous = await submit(customer.key, {});
    t.equal(anonymous.body.meter_id, null);
    t.equal(anonymous.body.plausibility.status, 'unknown');
  });

  t.test(
    'the worker reads async submissions against the window, records it and sends it by webhook data',
    async (t) => {
      const customer = await createCustomer(service.db);
      const receiver = await startWebhookReceiver();
      t.teardown(receiver.close);
      await submit(customer.key, { meter_id: 'W1' });
      await addWebhookEndpoint(service.db, service.config, { accountId: customer.accountId, url: receiver.url });
      const accepted = await submit(
        customer.key,
        { meter_id: 'W1', previous_reading: '3000' },
        { sync: false, fieldsAfterImage: true },
      );
      t.equal(accepted.status, 202);
      const meter = await waitForMeter(service.db, accepted.body.reference_id);
      t.equal(meter.status, 'completed');
      const reading = await service.db
        .selectFrom('readings')
        .selectAll()
        .where('submission_id', '=', meter.id)
        .executeTakeFirstOrThrow();
      t.match(reading, {
        plausibility: 'implausible',
        confidence: 20,
        reference_reading: '3000',
        reference_source: 'previous_reading',
        window_min: '2999',
        plausibility_reason: /below the reference reading 3000/,
      });
      t.equal(Number(reading.window_max), 3000 + 2.5 * 31 * 24, 'no previous_read_at: taken as a month old');
      const [webhook] = await receiver.waitFor(1);
      t.match(JSON.parse(webhook!.body), {
        event: 'reading.completed',
        data: {
          reference_id: accepted.body.reference_id,
          meter_id: 'W1',
          confidence: 20,
          needs_review: true,
          plausibility: {
            status: 'implausible',
            reference: '3000',
            reference_source: 'previous_reading',
            window: { min: 2999, max: 3000 + 2.5 * 31 * 24 },
            reason: /below the reference reading 3000/,
          },
        },
      });
    },
  );

  t.test('corrections: 404 for other accounts, 422 for bad readings, 409 while being read', async (t) => {
    const customer = await createCustomer(service.db);
    const stranger = await createCustomer(service.db);
    const done = await submit(customer.key, { meter_id: 'C1' });
    const path = `/meter-reading/${done.body.reference_id}/correction`;
    t.match(await api(stranger.key, 'POST', path, { reading: '1' }), {
      status: 404,
      body: { errors: { reference_id: [String] } },
    });
    t.match(await api(customer.key, 'POST', '/meter-reading/not-a-uuid/correction', { reading: '1' }), { status: 404 });
    for (const body of [{}, { reading: 'twelve' }, { reading: '' }, { reading: -1 }, { reading: null }, []]) {
      t.match(
        await api(customer.key, 'POST', path, body),
        { status: 422, body: { errors: { reading: [/meter reading/] } } },
        JSON.stringify(body),
      );
    }
    t.match(
      await api(customer.key, 'POST', path, { reading: 2390.3 }),
      { status: 200, body: { correction: { reading: '2390.3' } } },
      'a number is a reading',
    );
    t.match(await api('meterlens_live_' + '0'.repeat(32), 'POST', path, { reading: '1' }), {
      status: 422,
      body: { errors: { authorization: [String] } },
    });

    service.model.setBehaviour({ answer: { reading: '', confidence: 0, unobstructed: false } });
    t.teardown(() => service.model.setBehaviour({}));
    const unreadable = await submit(customer.key, { meter_id: 'C1' });
    service.model.setBehaviour({});
    t.equal(unreadable.status, 422);
    t.match(
      await api(customer.key, 'POST', `/meter-reading/${unreadable.body.reference_id}/correction`, {
        reading: '02390.500',
      }),
      {
        status: 200,
        body: { status: 'failed', error: { code: 'unreadable' }, correction: { reading: '02390.500' } },
      },
      'a person may read what the readers could not: the error stays beside the correction',
    );

    const pending = await submit(customer.key, { meter_id: 'C1' }, { sync: false });
    await service.db
      .updateTable('submissions')
      .set({ status: 'processing' })
      .where('reference_id', '=', pending.body.reference_id)
      .execute();
    // The worker may already have finished it; pin it as still being read.
    const finished = await service.db
      .selectFrom('submissions')
      .select('status')
      .where('reference_id', '=', pending.body.reference_id)
      .executeTakeFirstOrThrow();
    if (finished.status === 'processing') {
      t.match(
        await api(customer.key, 'POST', `/meter-reading/${pending.body.reference_id}/correction`, { reading: '1' }),
        { status: 409 },
      );
    }
  });

  t.test(
    "history: newest first, paged by starting_after (or cursor, its old name), only the account's own meters",
    async (t) => {
      const customer = await createCustomer(service.db);
      const stranger = await createCustomer(service.db);
      const references: string[] = [];
      for (let i = 0; i < 5; i++) references.push((await submit(customer.key, { meter_id: 'H/1' })).body.reference_id);
      await submit(customer.key, { meter_id: 'H2' });
      const readAll = async (parameter: string) => {
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const query: string = `?limit=2${cursor ? `&${parameter}=${cursor}` : ''}`;
          const page = await api(customer.key, 'GET', `/meters/${encodeURIComponent('H/1')}/readings${query}`);
          t.equal(page.status, 200);
          t.ok(page.body.readings.length <= 2);
          seen.push(...page.body.readings.map((reading: { reference_id: string }) => reading.reference_id));
          t.equal(page.body.has_more, page.body.next_cursor !== null, 'has_more when there is a next page');
          cursor = page.body.next_cursor;
          pages += 1;
        } while (cursor);
        return { seen, pages };
      };
      const paged = await readAll('starting_after');
      t.same(paged.seen, [...references].reverse(), 'every submission of the meter once, newest first');
      t.equal(paged.pages, 3);
      t.same(await readAll('cursor'), paged, 'cursor, the old name of starting_after, pages the same');
      const full = await api(customer.key, 'GET', '/meters/H%2F1/readings');
      t.match(full.body.readings[0], {
        meter_id: 'H/1',
        status: 'completed',
        created_at: String,
        finished_at: String,
        reading: MODEL_READING,
        plausibility: { status: 'ok' },
        correction: null,
      });
      const { body: newest } = await api(customer.key, 'GET', `/meter-reading/${references.at(-1)}`);
      t.same(full.body.readings[0], newest, 'a history entry is the submission as GET shows it');
      t.equal(full.body.readings[4].plausibility.status, 'unknown');

      t.match(await api(stranger.key, 'GET', '/meters/H%2F1/readings'), {
        status: 404,
        body: { errors: { meter_id: [String] } },
      });
      t.match(await api(customer.key, 'GET', '/meters/unknown/readings'), { status: 404 });
      t.match(await api(customer.key, 'GET', '/meters/bad%20id/readings'), {
        status: 422,
        body: { errors: { meter_id: [String] } },
      });
      for (const limit of ['0', '101', 'x', '-1', '1.5']) {
        t.match(
          await api(customer.key, 'GET', `/meters/H2/readings?limit=${limit}`),
          { status: 422, body: { errors: { limit: [String] } } },
          limit,
        );
      }
      t.match(await api(customer.key, 'GET', '/meters/H2/readings?cursor=nonsense'), {
        status: 422,
        body: { errors: { cursor: [String] } },
      });
      t.match(await api(customer.key, 'GET', '/meters/H2/readings?starting_after=nonsense'), {
        status: 422,
        body: { errors: { starting_after: [String] } },
      });
      const first = await api(customer.key, 'GET', '/meters/H%2F1/readings?limit=1');
      t.match(
        await api(
          customer.key,
          'GET',
          `/meters/H%2F1/readings?starting_after=${first.body.next_cursor}&cursor=${first.body.next_cursor}`,
        ),
        { status: 422, body: { errors: { cursor: [String] } } },
        'not both names at once',
      );
      t.match(await api(customer.key, 'GET', '/meters/H2/readings?limit=100'), {
        status: 200,
        body: { next_cursor: null },
      });
    },
  );

  t.test('PATCH needs an active subscription; the history and corrections do not', async (t) => {
    const customer = await createCustomer(service.db);
    const done = await submit(customer.key, { meter_id: 'S1' });
    t.equal((await api(customer.key, 'PATCH', '/meters/S1', { max_flow_m3_per_hour: 4 })).status, 200);
    await service.db
      .updateTable('subscriptions')
      .set({ period_start: sql<Date>`now() - interval '1 month'`, period_end: sql<Date>`now() - interval '1 minute'` })
      .where('account_id', '=', customer.accountId)
      .execute();
    for (const meterId of ['S1', 'S-new']) {
      t.match(
        await api(customer.key, 'PATCH', `/meters/${meterId}`, { max_flow_m3_per_hour: 6 }),
        { status: 422, body: { errors: { subscription: [/^Subscription expired on /] } } },
        `expired: ${meterId} refused`,
      );
    }
    const points = await service.db
      .selectFrom('meter_points')
      .select(['external_id', 'max_flow_m3_per_hour'])
      .where('account_id', '=', customer.accountId)
      .execute();
    t.same(points, [{ external_id: 'S1', max_flow_m3_per_hour: '4' }], 'nothing created or changed');
    t.match(
      await api(customer.key, 'GET', '/meters/S1/readings'),
      { status: 200, body: { readings: [{ reference_id: done.body.reference_id }] } },
      'the history stays readable',
    );
    t.match(
      await api(customer.key, 'POST', `/meter-reading/${done.body.reference_id}/correction`, { reading: '02390.300' }),
      { status: 200, body: { correction: { reading: '02390.300' } } },
      'and the data correctable',
    );
    for (const subscription of ['none', 'cancelled'] as const) {
      const unsubscribed = await createCustomer(service.db, { subscription });
      t.match(
        await api(unsubscribed.key, 'PATCH', '/meters/X1', { max_flow_m3_per_hour: 6 }),
        { status: 422, body: { errors: { subscription: [String] } } },
        subscription,
      );
    }
  });

  t.test(
    'PATCH creates meters up to the bound, exactly under a parallel burst; existing meters stay settable',
    async (t) => {
      const customer = await createCustomer(service.db);
      const free = 3;
      await sql`INSERT INTO meter_points (account_id, external_id)
      SELECT ${customer.accountId}, 'bulk-' || n FROM generate_series(1, ${METER_POINTS_PER_ACCOUNT - free}) AS n`.execute(
        service.db,
      );
      const burst = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          api(customer.key, 'PATCH', `/meters/burst-${i}`, { max_flow_m3_per_hour: 5 }),
        ),
      );
      t.equal(burst.filter((response) => response.status === 200).length, free, 'as many as there was room for');
      const refused = burst.filter((response) => response.status !== 200);
      t.equal(refused.length, 12 - free);
      for (const response of refused)
        t.match(response, {
          status: 422,
          body: { errors: { meters: [new RegExp(`has ${METER_POINTS_PER_ACCOUNT} meters`)] } },
        });
      const { count } = await service.db
        .selectFrom('meter_points')
        .select(sql<number>`count(*)::int`.as('count'))
        .where('account_id', '=', customer.accountId)
        .executeTakeFirstOrThrow();
      t.equal(count, METER_POINTS_PER_ACCOUNT, 'the bound holds');
      t.match(
        await api(customer.key, 'PATCH', '/meters/bulk-7', { max_flow_m3_per_hour: 7 }),
        { status: 200, body: { max_flow_m3_per_hour: 7 } },
        'an existing meter is still set',
      );
      t.match(await api(customer.key, 'PATCH', '/meters/another', { max_flow_m3_per_hour: 7 }), {
        status: 422,
        body: { errors: { meters: [String] } },
      });
      t.equal(
        (await submit(customer.key, { meter_id: 'photographed' })).body.meter_id,
        'photographed',
        'a submission still names a new meter: it is counted as usage',
      );
      const sameMeter = await Promise.all(
        [1, 2].map(() => api(customer.key, 'PATCH', '/meters/photographed', { max_flow_m3_per_hour: 8 })),
      );
      t.same(
        sameMeter.map((response) => response.status),
        [200, 200],
        'and that meter is settable',
      );
    },
  );

  t.test(
    'corrections: at most CORRECTIONS_PER_SUBMISSION per submission, exactly under a parallel burst',
    async (t) => {
      const customer = await createCustomer(service.db);
      const done = await submit(customer.key, { meter_id: 'K1' });
      const other = await submit(customer.key, { meter_id: 'K1' });
      const meter = await service.db
        .selectFrom('submissions')
        .select('id')
        .where('reference_id', '=', done.body.reference_id)
        .executeTakeFirstOrThrow();
      const free = 2;
      await sql`INSERT INTO reading_corrections (submission_id, reading, value, corrected_by)
      SELECT ${meter.id}, '1', 1, 'test' FROM generate_series(1, ${CORRECTIONS_PER_SUBMISSION - free})`.execute(
        service.db,
      );
      const path = `/meter-reading/${done.body.reference_id}/correction`;
      const burst = await Promise.all(
        Array.from({ length: 8 }, (_, i) => api(customer.key, 'POST', path, { reading: `0239${i}.000` })),
      );
      t.equal(burst.filter((response) => response.status === 200).length, free);
      for (const response of burst.filter((response) => response.status !== 200)) {
        t.match(response, {
          status: 422,
          body: {
            errors: {
              corrections: [`This submission has ${CORRECTIONS_PER_SUBMISSION} corrections, the most one may have`],
            },
          },
        });
      }
      const { count } = await service.db
        .selectFrom('reading_corrections')
        .select(sql<number>`count(*)::int`.as('count'))
        .where('submission_id', '=', meter.id)
        .executeTakeFirstOrThrow();
      t.equal(count, CORRECTIONS_PER_SUBMISSION, 'the bound holds');
      t.equal(
        (
          await api(customer.key, 'POST', `/meter-reading/${other.body.reference_id}/correction`, {
            reading: '00001.000',
          })
        ).status,
        200,
        'another submission has its own',
      );
    },
  );
  t.test(
    'GET /api/meters: every meter with its last trusted reading and 30 days of consumption, paged and searched',
    async (t) => {
      const customer = await createCustomer(service.db);
      const stranger = await createCustomer(service.db);
      const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000);
      const [, , , implausible] = await seedReadings(service.db, customer, [
        { meterId: 'SN-1', createdAt: daysAgo(40), reading: '00100.000', plausibility: 'unknown' },
        { meterId: 'SN-1', createdAt: daysAgo(10), reading: '00105.500', plausibility: 'ok' },
        { meterId: 'SN-1', createdAt: daysAgo(2), reading: '00900.000', plausibility: 'implausible' },
        { meterId: 'SN-2', createdAt: daysAgo(5), reading: '00070.000', plausibility: 'implausible' },
        { meterId: 'SN_3', createdAt: daysAgo(45), reading: '00010.000', plausibility: 'ok' },
      ]);
      const corrected = await service.db
        .selectFrom('submissions')
        .select('id')
        .where('reference_id', '=', implausible!)
        .executeTakeFirstOrThrow();
      await service.db
        .insertInto('reading_corrections')
        .values({
          submission_id: corrected.id,
          reading: '00060.000',
          value: '60',
          corrected_by: 'api key 1',
          api_key_id: null,
          user_id: null,
        })
        .execute();
      await refreshNeedsReview(service.db, { accountId: customer.accountId });
      t.equal(
        (await api(customer.key, 'PATCH', '/meters/X-9', { max_flow_m3_per_hour: 3 })).status,
        200,
        'a meter without photos',
      );
      await seedReadings(service.db, stranger, [{ meterId: 'SN-0', createdAt: daysAgo(1), reading: '00001.000' }]);

      const all = await api(customer.key, 'GET', '/meters?limit=100');
      t.equal(all.status, 200);
      t.same(
        all.body.data.map((meter: { meter_id: string }) => meter.meter_id),
        ['SN-1', 'SN-2', 'SN_3', 'X-9'],
        'in byte order, none of another account',
      );
      const [sn1, sn2, sn3, x9] = all.body.data;
      t.match(sn1, {
        last_trusted_reading: { reading: '00105.500', value: 105.5, source: 'reading', read_at: String },
        consumption_30_days_m3: 5.5,
        waiting_for_review: 1,
      });
      t.match(sn2, {
        last_trusted_reading: { reading: '00060.000', value: 60, source: 'correction', reference_id: implausible },
        consumption_30_days_m3: null,
        waiting_for_review: 0,
      });
      t.match(
        sn3,
        { last_trusted_reading: { reading: '00010.000' }, consumption_30_days_m3: null, waiting_for_review: 0 },
        'nothing read in the 30 days',
      );
      t.match(x9, {
        last_trusted_reading: null,
        consumption_30_days_m3: null,
        created_at: String,
        waiting_for_review: 0,
      });
      const waiting = await api(customer.key, 'GET', '/meter-readings?meter_id=SN-1&needs_review=true');
      t.equal(waiting.body.data.length, sn1.waiting_for_review, 'the count is what the needs_review filter lists');
      t.equal(
        (await api(customer.key, 'POST', `/meter-reading/${waiting.body.data[0].reference_id}/confirmation`)).status,
        200,
      );
      t.match(
        (await api(customer.key, 'GET', '/meters?meter_id_prefix=SN-1')).body.data[0],
        { waiting_for_review: 0 },
        'a confirmed reading waits no more',
      );

      const first = await api(customer.key, 'GET', '/meters?limit=2');
      t.match(first.body, { has_more: true, next_cursor: 'SN-2' });
      const second = await api(customer.key, 'GET', '/meters?limit=2&starting_after=SN-2');
      t.same(
        second.body.data.map((meter: { meter_id: string }) => meter.meter_id),
        ['SN_3', 'X-9'],
      );
      t.match(second.body, { has_more: false, next_cursor: null });

      const search = async (prefix: string) =>
        (await api(customer.key, 'GET', `/meters?meter_id_prefix=${encodeURIComponent(prefix)}`)).body.data.map(
          (meter: { meter_id: string }) => meter.meter_id,
        );
      t.same(await search('SN'), ['SN-1', 'SN-2', 'SN_3']);
      t.same(await search('SN_'), ['SN_3'], 'an _ in the prefix is itself, not a wildcard');
      t.same(await search('sn'), [], 'meter ids are case-sensitive');

      for (const [query, field] of [
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['meter_id_prefix=flat%203', 'meter_id_prefix'],
        ['starting_after=', 'starting_after'],
        ['prefix=SN', 'prefix'],
        ['cursor=bTQy', 'cursor'],
      ]) {
        const refused = await api(customer.key, 'GET', `/meters?${query}`);
        t.equal(refused.status, 422, query);
        t.same(Object.keys(refused.body.errors), [field], query);
      }
      t.equal((await api('meterlens_live_nope', 'GET', '/meters')).status, 422, 'a bad key');
    },
  );

  const DAY_MS = 86_400_000;
  const daysAgo = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString();

  t.test(
    'manual readings: 201 and trusted as the reference, in the history; 422 for a bad value, date, meter id or layout',
    async (t) => {
      const customer = await createCustomer(service.db);
      const readAt = daysAgo(20);
      const manual = await api(customer.key, 'POST', '/meters/T1/readings', { reading: '02380.000', read_at: readAt });
      t.match(manual, {
        status: 201,
        body: {
          reference_id: String,
          status: 'completed',
          created_at: readAt,
          reading: '02380.000',
          value: 2380,
          confidence: 100,
          model: 'manual',
          meter_id: 'T1',
          needs_review: false,
          plausibility: { status: 'unknown' },
          correction: null,
        },
      });
      const cases: Array<[string, unknown, string, RegExp]> = [
        ['T1', { reading: 'abc', read_at: readAt }, 'reading', /meter reading/],
        ['T1', { reading: -4, read_at: readAt }, 'reading', /meter reading/],
        ['T1', { read_at: readAt }, 'reading', /meter reading/],
        [
          'T1',
          { reading: '02381.000', read_at: new Date(Date.now() + DAY_MS).toISOString() },
          'read_at',
          /in the future/,
        ],
        ['T1', { reading: '02381.000', read_at: 'yesterday' }, 'read_at', /ISO 8601/],
        ['T1', { reading: '02381.000' }, 'read_at', /ISO 8601/],
        ['flat%203', { reading: '02381.000', read_at: readAt }, 'meter_id', /1–64 characters/],
        ['x'.repeat(65), { reading: '02381.000', read_at: readAt }, 'meter_id', /1–64 characters/],
        [
          'T1',
          { reading: '2381.5', read_at: readAt },
          'reading',
          /^Meter T1: 2381\.5 has 4 whole and 1 fractional wheels; the meter has 5 and 3 \(as 02380\.000 shows\)$/,
        ],
        [
          'T1',
          { reading: '002381.000', read_at: readAt },
          'reading',
          /002381\.000 has 6 whole and 3 fractional wheels/,
        ],
        ['T1', { reading: '02381', read_at: readAt }, 'reading', /02381 has 5 whole and 0 fractional wheels/],
      ];
      for (const [meterId, body, field, message] of cases) {
        t.match(
          await api(customer.key, 'POST', `/meters/${meterId}/readings`, body),
          { status: 422, body: { errors: { [field]: [message] } } },
          JSON.stringify(body),
        );
      }
      t.match(await api(customer.key, 'POST', '/meters/T1/readings', { reading: 2381.25, read_at: daysAgo(15) }), {
        status: 422,
        body: { errors: { reading: [/2381\.25 has 4 whole and 2 fractional wheels/] } },
      });

      const photo = await submit(customer.key, { meter_id: 'T1' });
      t.match(
        photo.body,
        {
          needs_review: false,
          plausibility: {
            status: 'ok',
            reference: '02380.000',
            reference_source: 'manual',
            reference_submission: manual.body.reference_id,
          },
        },
        "the manual reading is the next photo's reference",
      );
      const { body: history } = await api(customer.key, 'GET', '/meters/T1/readings');
      t.same(
        history.readings.map((entry: { reference_id: string }) => entry.reference_id),
        [photo.body.reference_id, manual.body.reference_id],
        'and is in the history',
      );
      t.same(
        (await api(customer.key, 'GET', `/meter-reading/${manual.body.reference_id}`)).body,
        manual.body,
        'GET shows it as the 201 did',
      );
    },
  );

  t.test(
    'a manual reading entered late takes its place by read_at: in the history, the meters list and the next reference',
    async (t) => {
      const customer = await createCustomer(service.db);
      const recent = await api(customer.key, 'POST', '/meters/V1/readings', {
        reading: '02385.000',
        read_at: daysAgo(2),
      });
      const photo = await submit(customer.key, { meter_id: 'V1' });
      const late = await api(customer.key, 'POST', '/meters/V1/readings', {
        reading: '02300.000',
        read_at: daysAgo(60),
      });
      t.equal(late.status, 201);
      const order = async (path: string) => (await api(customer.key, 'GET', path)).body;
      const firstPage = await order('/meters/V1/readings?limit=2');
      t.same(
        [
          ...firstPage.readings,
          ...(await order(`/meters/V1/readings?limit=2&cursor=${firstPage.next_cursor}`)).readings,
        ].map((entry: { reference_id: string }) => entry.reference_id),
        [photo.body.reference_id, recent.body.reference_id, late.body.reference_id],
        'newest first by when the meter showed it, across pages',
      );
      const [meter] = (await order('/meters?meter_id_prefix=V1')).data;
      t.match(
        meter.last_trusted_reading,
        { reading: '02390.276', source: 'reading' },
        'the photo, not the reading entered after it',
      );
      const next = await submit(customer.key, { meter_id: 'V1' });
      t.match(next.body.plausibility, { reference: '02390.276', reference_submission: photo.body.reference_id });
      await api(customer.key, 'POST', '/meters/V2/readings', { reading: '00010.000', read_at: daysAgo(1) });
      t.match((await order('/meters?meter_id_prefix=V2')).data[0].last_trusted_reading, { source: 'manual' });
    },
  );

  t.test(
    'suspicious: far above the usual consumption, needs review and is no reference until a person confirms it',
    async (t) => {
      const customer = await createCustomer(service.db);
      for (const [days, reading] of [
        [40, '02300.000'],
        [30, '02303.000'],
        [20, '02306.000'],
        [10, '02309.000'],
      ] as const) {
        t.equal(
          (await api(customer.key, 'POST', '/meters/U1/readings', { reading, read_at: daysAgo(days) })).status,
          201,
        );
      }
      const first = await submit(customer.key, { meter_id: 'U1' });
      t.match(
        first.body,
        {
          confidence: 97,
          needs_review: true,
          plausibility: {
            status: 'suspicious',
            reference: '02309.000',
            reference_source: 'manual',
            reason:
              /02390\.276 is far more than usual since the reference reading \(this meter usually uses about 0\.3 m³ a day/,
          },
        },
        '81 m³ in ten days: physically possible, but not the 0.3 m³ a day this meter uses',
      );
      const { max, usual_max: usualMax } = first.body.plausibility.window;
      t.ok(Math.abs(max - (2309 + 2.5 * 24 * 10)) < 0.01, `the physical limit: ten days of 2.5 m³/h (${max})`);
      t.ok(
        Math.abs(usualMax - (2309 + 3 * 0.3 * 10 + 1)) < 0.01,
        `usual: ten days of three times 0.3 m³, and 1 m³ (${usualMax})`,
      );
      const second = await submit(customer.key, { meter_id: 'U1' });
      t.match(
        second.body.plausibility,
        { status: 'suspicious', reference: '02309.000' },
        'a suspicious reading is no reference',
      );
      t.equal(
        (await api(customer.key, 'GET', '/meter-readings?limit=1')).body.data[0].needs_review,
        true,
        'the list says so too',
      );

      const confirmed = await api(customer.key, 'POST', `/meter-reading/${second.body.reference_id}/confirmation`);
      t.match(confirmed, {
        status: 200,
        body: {
          reading: MODEL_READING,
          needs_review: false,
          plausibility: { status: 'suspicious' },
          correction: { reading: MODEL_READING, corrected_by: `api key ${customer.keyId}` },
        },
      });
      const after = await submit(customer.key, { meter_id: 'U1' });
      t.match(
        after.body,
        {
          needs_review: false,
          plausibility: {
            status: 'ok',
            reference: MODEL_READING,
            reference_source: 'correction',
            reference_submission: second.body.reference_id,
          },
        },
        'the confirmed reading is the reference',
      );
      t.equal(
        (await api(customer.key, 'GET', `/meter-reading/${first.body.reference_id}`)).body.needs_review,
        true,
        'the unconfirmed one still needs review',
      );
    },
  );

  t.test('no lock-out: a wrong reference flags every right reading until a person confirms one', async (t) => {
    const customer = await createCustomer(service.db);
    t.equal(
      (await api(customer.key, 'POST', '/meters/L1/readings', { reading: '02400.500', read_at: daysAgo(1) })).status,
      201,
    );
    const flagged = [];
    for (let i = 0; i < 3; i++) {
      const photo = await submit(customer.key, { meter_id: 'L1' });
      t.match(
        photo.body,
        {
          needs_review: true,
          plausibility: { status: 'implausible', reference: '02400.500', reference_source: 'manual' },
        },
        `photo ${i + 1}`,
      );
      flagged.push(photo.body.reference_id);
    }
    t.match(await api(customer.key, 'POST', `/meter-reading/${flagged[1]}/confirmation`), {
      status: 200,
      body: { needs_review: false },
    });
    const released = await submit(customer.key, { meter_id: 'L1' });
    t.match(
      released.body,
      {
        needs_review: false,
        plausibility: {
          status: 'ok',
          reference: MODEL_READING,
          reference_source: 'correction',
          reference_submission: flagged[1],
        },
      },
      'the confirmed reading replaced the wrong reference (a replaced meter)',
    );
  });

  t.test(
    "the meter's layout: from its trusted readings, a previous_reading's format or a setting; a reading in another is never billed unseen",
    async (t) => {
      const customer = await createCustomer(service.db);
      t.teardown(() => service.model.setBehaviour({}));
      const answer = (reading: string) =>
        service.model.setBehaviour({ answer: { reading, confidence: 99, unobstructed: true } });

      await submit(customer.key, { meter_id: 'K1' });
      answer('02391');
      const wholeUnitsOnly = await submit(customer.key, { meter_id: 'K1' });
      t.match(
        wholeUnitsOnly.body,
        {
          confidence: 20,
          needs_review: true,
          plausibility: {
            status: 'implausible',
            reason: '02391 has 5 whole and 0 fractional wheels; the meter has 5 and 3 (as 02390.276 shows)',
          },
        },
        'a 5 + 3 meter read as five wheels: inside the window, but not its layout',
      );
      answer('2390.500');
      t.match(
        (await submit(customer.key, { meter_id: 'K1' })).body,
        { needs_review: false, plausibility: { status: 'ok' } },
        'a reading without its leading zeros has the layout',
      );
      t.match(
        await api(customer.key, 'PATCH', '/meters/K1', { max_flow_m3_per_hour: 3 }),
        {
          status: 200,
          body: {
            layout: null,
            effective_layout: { whole_wheels: 5, fractional_wheels: 3, unit: 'm3', shown_by: '02390.276' },
          },
        },
        'the settings say which layout readings are judged in, and which reading shows it',
      );

      answer('02391');
      const previousDated = { previous_read_at: new Date(Date.now() - 86_400_000).toISOString() };
      t.match(
        (await submit(customer.key, { meter_id: 'K2', previous_reading: '02390', ...previousDated })).body,
        { needs_review: false, plausibility: { status: 'ok', reference: '02390' } },
        "a previous_reading written with its zeros shows a new meter's layout",
      );
      answer(MODEL_READING);
      t.match(
        (await submit(customer.key, { meter_id: 'K2', previous_reading: '02390', ...previousDated })).body,
        {
          needs_review: true,
          plausibility: {
            status: 'implausible',
            reason: /02390\.276 has 5 whole and 3 fractional wheels; the meter has 5 and 0 \(as 02390 shows\)/,
          },
        },
        "and the photo's reading is judged in it",
      );
      t.match(
        (await submit(customer.key, { meter_id: 'K2', previous_reading: '2390', ...previousDated })).body,
        {
          plausibility: {
            status: 'implausible',
            reference: '2390',
            reason: /the meter has 5 and 0 \(as 02390 shows\)/,
          },
        },
        "one without its zeros shows none (a billing system may round it): the meter's newest trusted value that shows one does",
      );
      t.match(
        (await submit(customer.key, { meter_id: 'K4', previous_reading: '2390', ...previousDated })).body,
        { needs_review: false, plausibility: { status: 'ok' } },
        'a meter with none: no layout to judge in',
      );

      t.match(
        await api(customer.key, 'PATCH', '/meters/K3', {
          layout: { whole_wheels: 5, fractional_wheels: 3, unit: 'm3' },
        }),
        {
          status: 200,
          body: {
            meter_id: 'K3',
            max_flow_m3_per_hour: null,
            layout: { whole_wheels: 5, fractional_wheels: 3, unit: 'm3' },
            effective_layout: { whole_wheels: 5, fractional_wheels: 3, unit: 'm3', shown_by: null },
          },
        },
        'a layout set for a meter before its first photo',
      );
      answer('02391');
      const againstSetting = await submit(customer.key, {
        meter_id: 'K3',
        previous_reading: '02390',
        ...previousDated,
      });
      t.match(
        againstSetting.body,
        {
          needs_review: true,
          plausibility: { status: 'implausible', reason: /the meter has 5 and 3 \(as set for the meter\)/ },
        },
        "the setting outweighs a previous_reading's format",
      );
      t.match(
        await api(customer.key, 'POST', '/meters/K3/readings', { reading: '02391', read_at: daysAgo(1) }),
        {
          status: 422,
          body: {
            errors: {
              reading: [
                /Meter K3: 02391 has 5 whole and 0 fractional wheels; the meter has 5 and 3 \(as set for the meter\)/,
              ],
            },
          },
        },
        'a manual reading in another layout than the setting',
      );
      t.match(
        await api(customer.key, 'PATCH', '/meters/K3', { layout: null }),
        {
          status: 200,
          body: { layout: null, effective_layout: { whole_wheels: 5, fractional_wheels: 0, shown_by: '02390' } },
        },
        "cleared: the layout the meter's values show again",
      );
      t.same(
        await service.db
          .selectFrom('meter_points')
          .select(['whole_wheels', 'fractional_wheels'])
          .where('external_id', '=', 'K3')
          .executeTakeFirst(),
        {
          whole_wheels: null,
          fractional_wheels: null,
        },
      );
    },
  );

  t.test('PATCH: a bad layout, unit or body is a 422 in the envelope, and changes nothing', async (t) => {
    const customer = await createCustomer(service.db);
    t.equal(
      (
        await api(customer.key, 'PATCH', '/meters/P1', {
          max_flow_m3_per_hour: 4,
          layout: { whole_wheels: 5, fractional_wheels: 3, unit: 'm3' },
        })
      ).status,
      200,
    );
    const cases: Array<[unknown, string, RegExp]> = [
      [{ layout: { whole_wheels: 5, fractional_wheels: 3 } }, 'layout', /layout\.unit must be "m3"/],
      [{ layout: { whole_wheels: 5, fractional_wheels: 3, unit: 'gal' } }, 'layout', /layout\.unit must be "m3"/],
      [{ layout: { whole_wheels: 5, fractional_wheels: 3, unit: 'M3' } }, 'layout', /layout\.unit must be "m3"/],
      [{ layout: { whole_wheels: 0, fractional_wheels: 3, unit: 'm3' } }, 'layout', /"whole_wheels": 1–10/],
      [{ layout: { whole_wheels: 11, fractional_wheels: 3, unit: 'm3' } }, 'layout', /"whole_wheels": 1–10/],
      [{ layout: { whole_wheels: 5, fractional_wheels: 7, unit: 'm3' } }, 'layout', /"fractional_wheels": 0–6/],
      [{ layout: { whole_wheels: 5, fractional_wheels: -1, unit: 'm3' } }, 'layout', /"fractional_wheels": 0–6/],
      [{ layout: { whole_wheels: 4.5, fractional_wheels: 3, unit: 'm3' } }, 'layout', /layout must be/],
      [{ layout: { whole_wheels: '5', fractional_wheels: '3', unit: 'm3' } }, 'layout', /layout must be/],
      [{ layout: '5+3' }, 'layout', /layout must be/],
      [{ layout: [5, 3] }, 'layout', /layout must be/],
      [{ layout: 53 }, 'layout', /layout must be/],
      [{ max_flow_m3_per_hour: 5, layout: {} }, 'layout', /layout must be/],
      [
        { layout: { whole_wheels: 5, fractional_wheels: 3, unit: 'm3' }, max_flow_m3_per_hour: -1 },
        'max_flow_m3_per_hour',
        /above 0/,
      ],
      [{}, 'request', /sets max_flow_m3_per_hour, layout or both/],
      [{ max_flow: 5 }, 'max_flow', /^Unknown field: the body takes max_flow_m3_per_hour, layout$/],
      [{ max_flow_m3_per_hour: 6, foo: 1 }, 'foo', /^Unknown field: the body takes max_flow_m3_per_hour, layout$/],
      [
        { layout: { whole_wheels: 6, fractional_wheels: 2, unit: 'm3', digits: 8 } },
        'layout.digits',
        /^Unknown field: layout takes whole_wheels, fractional_wheels, unit$/,
      ],
      [[1, 2], 'request', /sets max_flow_m3_per_hour, layout or both/],
      [5, 'request', /sets max_flow_m3_per_hour, layout or both/],
      ['layout', 'request', /sets max_flow_m3_per_hour, layout or both/],
      [null, 'request', /sets max_flow_m3_per_hour, layout or both/],
    ];
    for (const [body, field, message] of cases) {
      t.match(
        await api(customer.key, 'PATCH', '/meters/P1', body),
        { status: 422, body: { errors: { [field]: [message] } } },
        JSON.stringify(body),
      );
    }
    t.same(
      await service.db
        .selectFrom('meter_points')
        .select(['max_flow_m3_per_hour', 'whole_wheels', 'fractional_wheels'])
        .where('account_id', '=', customer.accountId)
        .execute(),
      [{ max_flow_m3_per_hour: '4', whole_wheels: 5, fractional_wheels: 3 }],
      'the settings stand',
    );
    t.match(
      await api(customer.key, 'PATCH', '/meters/P1', { max_flow_m3_per_hour: null }),
      {
        status: 200,
        body: { max_flow_m3_per_hour: null, layout: { whole_wheels: 5, fractional_wheels: 3, unit: 'm3' } },
      },
      'one setting changed leaves the other',
    );
  });

  t.test(
    'confirmation: 404 for other accounts, 409 for a failed or unfinished submission; needs_review on every shape',
    async (t) => {
      const customer = await createCustomer(service.db);
      const stranger = await createCustomer(service.db);
      const done = await submit(customer.key, { meter_id: 'V1' });
      t.equal(done.body.needs_review, false, 'a confident reading with no flag: billable (sync response)');
      t.match(await api(stranger.key, 'POST', `/meter-reading/${done.body.reference_id}/confirmation`), {
        status: 404,
        body: { errors: { reference_id: [String] } },
      });
      t.match(await api(customer.key, 'POST', '/meter-reading/not-a-uuid/confirmation'), { status: 404 });

      service.model.setBehaviour({ answer: { reading: '', confidence: 0, unobstructed: false } });
      t.teardown(() => service.model.setBehaviour({}));
      const unreadable = await submit(customer.key, { meter_id: 'V1' });
      service.model.setBehaviour({});
      const failedPath = `/meter-reading/${unreadable.body.reference_id}`;
      t.match(
        await api(customer.key, 'GET', failedPath),
        { body: { status: 'failed', needs_review: true } },
        'a failed submission needs review',
      );
      t.match(await api(customer.key, 'POST', `${failedPath}/confirmation`), {
        status: 409,
        body: { errors: { reference_id: [/no reading to confirm/] } },
      });
      t.match(
        await api(customer.key, 'POST', `${failedPath}/correction`, { reading: '02390.000' }),
        { status: 200, body: { needs_review: false } },
        'until a person reads it',
      );

      await setReviewSettings(service.db, customer.accountId, { reviewBelow: 98 });
      const unsure = await submit(customer.key, { meter_id: 'V1' });
      t.match(
        unsure.body,
        { confidence: 97, needs_review: true, plausibility: { status: 'ok' } },
        "below the account's review threshold: needs review",
      );
      const { body: history } = await api(customer.key, 'GET', '/meters/V1/readings');
      t.same(
        history.readings.map((entry: { needs_review: boolean }) => entry.needs_review),
        [true, false, true],
        'the history: the threshold applies to stored readings too; the corrected failure is billable',
      );
    },
  );
});
