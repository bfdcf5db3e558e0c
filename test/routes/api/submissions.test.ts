import { once } from 'node:events';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { sql } from 'kysely';
import { EXPORT_COLUMNS } from '../../../src/schemas/meter-reading.ts';
import { refreshNeedsReview } from '../../../src/meters/review.ts';
import { addWebhookEndpoint } from '../../../src/webhooks/endpoints.ts';
import { renderMeterPhoto } from '../../fakes/meter-photo.ts';
import { startWebhookReceiver } from '../../fakes/webhook-receiver.ts';
import { seedReadings } from '../../helpers/seed-readings.ts';
import {
  createCustomer,
  startTestService,
  submitPhoto,
  waitFor,
  waitForMeter,
  type TestService,
} from '../../helpers/service.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function get(
  service: TestService,
  path: string,
  key: string | undefined,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(`${service.url}${path}`, {
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** RFC 4180 records, each a map from the header row's names; strict about quoting, as a spreadsheet is. */
function parseCsv(text: string): Array<Record<string, string>> {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let at = 0;
  while (at < text.length) {
    if (text[at] === '"') {
      const end = /^"((?:[^"]|"")*)"/.exec(text.slice(at));
      if (!end) throw new Error(`an unclosed quote at ${at}`);
      field = end[1]!.replaceAll('""', '"');
      at += end[0].length;
    } else {
      const plain = /^[^",\r\n]*/.exec(text.slice(at))![0];
      field = plain;
      at += plain.length;
    }
    record.push(field);
    if (text[at] === ',') at += 1;
    else if (text.startsWith('\r\n', at)) {
      records.push(record);
      record = [];
      at += 2;
    } else throw new Error(`expected , or CRLF at ${at}`);
  }
  const [header, ...rows] = records;
  return rows.map((row) => Object.fromEntries(header!.map((name, index) => [name, row[index]!])));
}

t.test('results by reference and lists', async (t) => {
  const service = await startTestService(t);
  const photo = await renderMeterPhoto();

  t.test('an async submission: 202 with Location, then GET follows it to the webhook’s result', async (t) => {
    const customer = await createCustomer(service.db);
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    await addWebhookEndpoint(service.db, service.config, {
      accountId: customer.accountId,
      url: `${receiver.url}/hook`,
    });
    const accepted = await submitPhoto(service, { key: customer.key, image: photo });
    t.equal(accepted.status, 202);
    const location = accepted.headers.get('location');
    t.equal(location, `/api/meter-reading/${accepted.body.reference_id}`);
    await waitForMeter(service.db, accepted.body.reference_id);
    const result = await get(service, location!, customer.key);
    t.equal(result.status, 200);
    t.match(result.body, {
      reference_id: accepted.body.reference_id,
      status: 'completed',
      reading: '02390.276',
      value: 2390.276,
      confidence: 97,
      escalated: false,
      created_at: String,
      finished_at: String,
    });
    const delivery = await waitFor(
      () => service.db.selectFrom('webhook_deliveries').select('payload').executeTakeFirst(),
      (row) => row !== undefined,
    );
    const { created_at: _created, finished_at: _finished, status: _status, correction, ...fields } = result.body;
    t.same((delivery!.payload as { data: unknown }).data, fields, 'GET carries the same fields as the webhook’s data');
    t.equal(correction, null, 'and, beside them, no correction yet');
  });

  t.test('a sync submission: GET gives the same fields as the sync response', async (t) => {
    const customer = await createCustomer(service.db);
    const sync = await submitPhoto(service, { key: customer.key, image: photo, sync: true });
    t.equal(sync.status, 200);
    const result = await get(service, `/api/meter-reading/${sync.body.reference_id}`, customer.key);
    const { created_at: _created, finished_at: _finished, correction, ...fields } = result.body;
    t.same(fields, sync.body);
    t.equal(correction, null, 'and, beside them, no correction yet');
  });

  t.test('a failed submission: GET gives the error code and message', async (t) => {
    const customer = await createCustomer(service.db);
    service.model.setBehaviour({ answer: { reading: '', confidence: 0, unobstructed: false } });
    t.teardown(() => service.model.setBehaviour({}));
    const failed = await submitPhoto(service, { key: customer.key, image: photo, sync: true });
    t.equal(failed.status, 422);
    const result = await get(service, `/api/meter-reading/${failed.body.reference_id}`, customer.key);
    t.match(result, { status: 200, body: { status: 'failed', error: { code: 'unreadable', message: String } } });
    t.notOk('reading' in result.body);
  });

  t.test('a pending submission: only its status', async (t) => {
    const customer = await createCustomer(service.db);
    const { id } = await service.db
      .insertInto('submissions')
      .values({
        account_id: customer.accountId,
        api_key_id: customer.keyId,
        mode: 'async',
        error_code: null,
        error_message: null,
        started_at: null,
        finished_at: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const meter = await service.db
      .selectFrom('submissions')
      .select('reference_id')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    const result = await get(service, `/api/meter-reading/${meter.reference_id}`, customer.key);
    t.same(result.body, {
      reference_id: meter.reference_id,
      status: 'pending',
      created_at: result.body.created_at,
      finished_at: null,
    });
  });

  t.test('counter_box and per-wheel digits, in the stored upright image’s frame', async (t) => {
    const customer = await createCustomer(service.db);
    const sync = await submitPhoto(service, { key: customer.key, image: photo, sync: true });
    const box: Array<[number, number]> = [
      [10, 20],
      [110, 22],
      [111, 60],
      [11, 58],
    ];
    await sql`UPDATE readings SET counter_box = ${JSON.stringify(box)}::jsonb, digit_confidences = ${[99, 98, 97, 96, 95, 94, 93, 92]}
              WHERE id = ${sync.body.reading_id}`.execute(service.db);
    const image = await service.db
      .selectFrom('submission_photos as i')
      .innerJoin('submissions as m', 'm.id', 'i.submission_id')
      .select(['i.width', 'i.height'])
      .where('m.reference_id', '=', sync.body.reference_id)
      .executeTakeFirstOrThrow();
    const result = await get(service, `/api/meter-reading/${sync.body.reference_id}`, customer.key);
    t.same(result.body.counter_box, { corners: box, image_width: image.width, image_height: image.height });
    t.same(
      result.body.digits,
      [0, 2, 3, 9, 0, 2, 7, 6].map((digit, wheel) => ({ digit, confidence: 99 - wheel })),
    );
  });

  t.test('another account’s or a malformed reference is 404; a bad key 422', async (t) => {
    const owner = await createCustomer(service.db);
    const stranger = await createCustomer(service.db);
    const sync = await submitPhoto(service, { key: owner.key, image: photo, sync: true });
    for (const [name, path] of [
      ['another account’s', `/api/meter-reading/${sync.body.reference_id}`],
      ['unknown', '/api/meter-reading/00000000-0000-4000-8000-000000000000'],
      ['malformed', '/api/meter-reading/not-a-uuid'],
    ]) {
      const result = await get(service, path, stranger.key);
      t.equal(result.status, 404, name);
      t.match(result.body, { errors: { reference_id: [/No submission/] } }, name);
    }
    const unauthenticated = await get(service, `/api/meter-reading/${sync.body.reference_id}`, undefined);
    t.match(unauthenticated, { status: 422, body: { errors: { authorization: ['Invalid or inactive API key'] } } });
  });

  t.test('reading results is not usage, and works with the month’s quota used up', async (t) => {
    const customer = await createCustomer(service.db, { monthlyLimit: 1 });
    const sync = await submitPhoto(service, { key: customer.key, image: photo, sync: true });
    t.equal(sync.status, 200);
    for (let i = 0; i < 3; i++) {
      t.equal((await get(service, `/api/meter-reading/${sync.body.reference_id}`, customer.key)).status, 200);
      t.equal((await get(service, '/api/meter-readings', customer.key)).status, 200);
    }
    const usage = await service.db
      .selectFrom('api_usage')
      .select('request_count')
      .where('account_id', '=', customer.accountId)
      .executeTakeFirstOrThrow();
    t.equal(usage.request_count, 1);
  });

  t.test('the list: newest first, a page at a time, filtered', async (t) => {
    const customer = await createCustomer(service.db);
    const other = await createCustomer(service.db);
    await submitPhoto(service, { key: other.key, image: photo, sync: true });
    const references: string[] = [];
    for (let i = 0; i < 5; i++)
      references.unshift(
        (await submitPhoto(service, { key: customer.key, image: photo, sync: true })).body.reference_id,
      );
    // Whole milliseconds, so created_after (a client's millisecond timestamp) splits them exactly.
    await service.db
      .updateTable('submissions')
      .set({ created_at: sql`date_trunc('milliseconds', created_at)` })
      .where('account_id', '=', customer.accountId)
      .execute();
    // Same created_at for two meters: the id breaks the tie, so no page skips or repeats one.
    await service.db
      .updateTable('submissions')
      .set({ created_at: sql`(SELECT created_at FROM submissions WHERE reference_id = ${references[1]})` })
      .where('reference_id', '=', references[2])
      .execute();
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Awaited<ReturnType<typeof get>> = await get(
        service,
        `/api/meter-readings?limit=2${cursor ? `&starting_after=${cursor}` : ''}`,
        customer.key,
      );
      t.equal(page.status, 200);
      seen.push(...page.body.data.map((item: { reference_id: string }) => item.reference_id));
      t.equal(page.body.has_more, page.body.next_cursor !== null);
      cursor = page.body.next_cursor;
      pages += 1;
    } while (cursor && pages < 10);
    t.equal(pages, 3);
    t.same(seen, references, 'every submission once, newest first, none of another account');

    const failed = await service.db
      .updateTable('submissions')
      .set({ status: 'failed', error_code: 'expired', error_message: 'x' })
      .where('reference_id', '=', references[4])
      .returning('reference_id')
      .executeTakeFirstOrThrow();
    const onlyFailed = await get(service, '/api/meter-readings?status=failed', customer.key);
    t.same(
      onlyFailed.body.data.map((item: { reference_id: string }) => item.reference_id),
      [failed.reference_id],
    );
    t.same(onlyFailed.body.data[0].error, { code: 'expired', message: 'x' });

    const newest = await service.db
      .selectFrom('submissions')
      .select('created_at')
      .where('reference_id', '=', references[1])
      .executeTakeFirstOrThrow();
    const after = await get(
      service,
      `/api/meter-readings?created_after=${encodeURIComponent(newest.created_at.toISOString())}`,
      customer.key,
    );
    t.same(
      after.body.data.map((item: { reference_id: string }) => item.reference_id),
      [references[0]],
      'strictly after',
    );
    t.equal((await get(service, '/api/meter-readings?limit=100', customer.key)).body.data.length, 5);
  });

  t.test('the list filters by meter_id, plausibility and a created range, and pages under the filter', async (t) => {
    const customer = await createCustomer(service.db);
    const other = await createCustomer(service.db);
    const day = (n: number) => new Date(Date.UTC(2026, 9, n, 12));
    const [a1, b1, a2, none, a3] = await seedReadings(service.db, customer, [
      { createdAt: day(1), meterId: 'SN_A', reading: '00100.000', plausibility: 'unknown' },
      { createdAt: day(2), meterId: 'SN-B', reading: '00050.000', plausibility: 'ok' },
      { createdAt: day(3), meterId: 'SN_A', reading: '00090.000', plausibility: 'implausible' },
      { createdAt: day(4), reading: '00001.000' },
      { createdAt: day(5), meterId: 'SN_A', reading: '00110.000', plausibility: 'ok' },
    ]);
    await seedReadings(service.db, other, [
      { createdAt: day(3), meterId: 'SN_A', reading: '00100.000', plausibility: 'ok' },
    ]);
    const references = async (query: string) => {
      const page = await get(service, `/api/meter-readings?${query}`, customer.key);
      t.equal(page.status, 200, query);
      return page.body.data.map((item: { reference_id: string }) => item.reference_id);
    };
    t.same(await references('meter_id=SN_A'), [a3, a2, a1], 'one meter, not another account’s meter of the same name');
    t.same(await references('meter_id=SN-NONE'), [], 'a meter the account does not have: nothing');
    t.same(await references('plausibility=ok'), [a3, b1]);
    t.same(await references('plausibility=implausible&meter_id=SN_A'), [a2]);
    t.same(await references(`created_before=${day(4).toISOString()}`), [a2, b1, a1], 'strictly before');
    t.same(await references(`created_after=${day(1).toISOString()}&created_before=${day(5).toISOString()}`), [
      none,
      a2,
      b1,
    ]);

    t.same(await references('needs_review=true'), [a2], 'implausible: needs review');
    t.same(await references('needs_review=false'), [a3, none, b1, a1]);

    const [lowRow, correctedRow] = await service.db
      .selectFrom('submissions')
      .select('id')
      .where('reference_id', 'in', [b1, a2])
      .orderBy('created_at')
      .execute();
    await service.db.updateTable('readings').set({ confidence: 50 }).where('submission_id', '=', lowRow!.id).execute();
    await service.db
      .insertInto('reading_corrections')
      .values({ submission_id: correctedRow!.id, reading: '00095.000', value: '95', corrected_by: 'tester' })
      .execute();
    await refreshNeedsReview(service.db, { accountId: customer.accountId });
    t.same(
      await references('needs_review=true'),
      [b1],
      'less confident than the account’s threshold; a corrected reading no longer',
    );
    t.same(await references('needs_review=true&meter_id=SN_A'), [], 'combined with the other filters');
    t.same(
      (await get(service, `/api/meter-reading/${b1}`, customer.key)).body.needs_review,
      true,
      'the filter and the submission itself agree',
    );

    const first = await get(service, '/api/meter-readings?meter_id=SN_A&limit=2', customer.key);
    t.match(first.body, { has_more: true, next_cursor: a2 });
    const second = await get(
      service,
      `/api/meter-readings?meter_id=SN_A&limit=2&starting_after=${first.body.next_cursor}`,
      customer.key,
    );
    t.same(
      second.body.data.map((item: { reference_id: string }) => item.reference_id),
      [a1],
      'the next page keeps the filter',
    );
    t.match(second.body, { has_more: false, next_cursor: null });
  });

  t.test('the billing export: CSV by Accept or format=csv, every matching row, streamed', async (t) => {
    const customer = await createCustomer(service.db);
    const day = (n: number) => new Date(Date.UTC(2026, 7, n, 8));
    const references = await seedReadings(service.db, customer, [
      { createdAt: day(1), meterId: 'SN-C', reading: '00100.000', plausibility: 'unknown' },
      { createdAt: day(2), meterId: 'SN-C', reading: '00110.000', plausibility: 'ok' },
      { createdAt: day(3), meterId: 'SN-C', reading: '00990.000', plausibility: 'implausible' },
      { createdAt: day(4), meterId: 'SN-C', reading: '00120.000', plausibility: 'ok' },
      { createdAt: day(5), meterId: 'SN-C', reading: '00130.000', plausibility: 'ok' },
      { createdAt: day(6), meterId: 'SN-D', reading: '00001.000', plausibility: 'unknown' },
    ]);
    const [manual, machine, flagged, confirmed, corrected, failed] = references;
    const rowId = async (reference: string) =>
      (
        await service.db
          .selectFrom('submissions')
          .select('id')
          .where('reference_id', '=', reference)
          .executeTakeFirstOrThrow()
      ).id;
    await service.db.updateTable('submissions').set({ mode: 'manual' }).where('reference_id', '=', manual!).execute();
    await service.db
      .insertInto('reading_corrections')
      .values([
        { submission_id: await rowId(confirmed!), reading: '00120.000', value: '120', corrected_by: 'ops@example.com' },
        {
          submission_id: await rowId(corrected!),
          reading: '00125.500',
          value: '125.5',
          corrected_by: '=HYPERLINK("http://x","a, b")',
        },
      ])
      .execute();
    await service.db
      .deleteFrom('readings')
      .where('submission_id', '=', await rowId(failed!))
      .execute();
    await service.db
      .updateTable('submissions')
      .set({ status: 'failed', error_code: 'unreadable', error_message: 'no dial' })
      .where('reference_id', '=', failed!)
      .execute();
    await refreshNeedsReview(service.db, { accountId: customer.accountId });

    const csv = async (query: string, headers: Record<string, string> = {}) => {
      const response = await fetch(`${service.url}/api/meter-readings${query}`, {
        headers: { authorization: `Bearer ${customer.key}`, ...headers },
      });
      return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
    };
    const byAccept = await csv('', { accept: 'text/csv' });
    t.equal(byAccept.status, 200);
    t.match(byAccept.type, /^text\/csv/);
    t.ok(byAccept.text.startsWith(`${EXPORT_COLUMNS.join(',')}\r\n`), 'the header row first');
    const byFormat = await csv('?format=csv');
    t.equal(byFormat.text, byAccept.text, 'format=csv gives the same');
    t.match((await csv('', { accept: 'application/json' })).type, /^application\/json/, 'JSON otherwise');

    const rows = parseCsv(byAccept.text);
    t.same(
      rows.map((row) => row.reference_id),
      [failed, corrected, confirmed, flagged, machine, manual],
      'every submission, newest first',
    );
    const of = (reference: string) => rows.find((row) => row.reference_id === reference)!;
    t.match(of(manual!), {
      meter_id: 'SN-C',
      created_at: '2026-08-01T08:00:00.000Z',
      status: 'completed',
      quality: 'manual',
      needs_review: 'false',
      consumption: '',
    });
    t.match(of(machine!), {
      reading: '00110.000',
      value: '110',
      unit: 'm3',
      confidence: '97',
      plausibility: 'ok',
      whole_units_agreed: 'false',
      quality: 'machine',
      consumption: '10',
    });
    t.match(
      of(flagged!),
      { quality: 'machine', needs_review: 'true', consumption: '' },
      'a flagged reading is no trusted value',
    );
    t.match(
      of(confirmed!),
      { quality: 'confirmed', needs_review: 'false', consumption: '10', corrected_reading: '00120.000' },
      'from the last trusted value',
    );
    t.match(of(corrected!), {
      quality: 'corrected',
      consumption: '5.5',
      corrected_reading: '00125.500',
      corrected_by: `'=HYPERLINK("http://x","a, b")`,
      corrected_at: /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/,
      escalated: 'false',
      model: 'seed',
    });
    t.match(byAccept.text, `"'=HYPERLINK(""http://x"",""a, b"")"`, 'quoted as RFC 4180 says, and no formula');
    t.match(
      of(failed!),
      {
        meter_id: 'SN-D',
        status: 'failed',
        quality: 'failed',
        needs_review: 'true',
        whole_units_agreed: '',
        reading: '',
        value: '',
      },
      'a meter id no formula either',
    );

    t.same(
      parseCsv((await csv('?format=csv&meter_id=SN-C&needs_review=true')).text).map((row) => row.reference_id),
      [flagged],
      'the list’s filters apply',
    );
    t.same(
      parseCsv((await csv(`?format=csv&created_before=${day(2).toISOString()}`)).text).map((row) => row.reference_id),
      [manual],
    );
    for (const [query, field] of [
      ['format=xml', 'format'],
      ['format=csv&limit=5', 'limit'],
      [`format=csv&starting_after=${manual}`, 'starting_after'],
      ['format=csv&meterid=SN-C', 'meterid'],
    ]) {
      const refused = await csv(`?${query}`);
      t.equal(refused.status, 422, query);
      t.same(Object.keys(JSON.parse(refused.text).errors), [field], query);
    }
  });

  t.test(
    'the billing export reads rows as the client takes them, and a client that stops holds no database connection',
    async (t) => {
      const customer = await createCustomer(service.db);
      await sql`INSERT INTO submissions (account_id, api_key_id, mode, status, created_at, finished_at)
      SELECT ${customer.accountId}, ${customer.keyId}, 'async', 'completed', now() - g * interval '1 second', now() FROM generate_series(1, 50000) g`.execute(
        service.db,
      );
      await sql`INSERT INTO readings (submission_id, reading, value, confidence, reader, model, escalated, attempts, read_ms, plausibility)
      SELECT id, '00001.000', 1, 95, 'seed', 'seed', false, '[]', 1, 'ok' FROM submissions WHERE account_id = ${customer.accountId}`.execute(
        service.db,
      );
      const request = http.get(`${service.url}/api/meter-readings?format=csv`, {
        headers: { authorization: `Bearer ${customer.key}` },
      });
      const [response] = (await once(request, 'response')) as [http.IncomingMessage];
      t.equal(response.statusCode, 200);
      await sleep(1000); // not reading: the server's buffers fill, and the export waits

      const busy = await sql<{ count: number }>`SELECT count(*)::int AS count FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle' AND query ILIKE '%reading_corrections%'`.execute(
        service.db,
      );
      t.equal(busy.rows[0]!.count, 0, 'no query open or transaction held while the client waits');
      const oldest = await service.db
        .selectFrom('submissions')
        .select('id')
        .where('account_id', '=', customer.accountId)
        .orderBy('created_at')
        .limit(1)
        .executeTakeFirstOrThrow();
      await service.db
        .updateTable('readings')
        .set({ model: 'changed-while-paused' })
        .where('submission_id', '=', oldest.id)
        .execute();

      let text = '';
      for await (const chunk of response) text += chunk;
      t.equal(text.trimEnd().split('\r\n').length, 50_001, 'every row once the client reads on');
      t.match(
        text.trimEnd().split('\r\n').at(-1),
        /,changed-while-paused$/,
        'the last rows fetched after the pause, not held in memory before it',
      );
    },
  );

  t.test('an unknown list parameter is a 422 naming it, not ignored', async (t) => {
    const customer = await createCustomer(service.db);
    for (const name of ['meterid', 'search', 'created_at']) {
      const result = await get(service, `/api/meter-readings?${name}=SN-1`, customer.key);
      t.equal(result.status, 422, name);
      t.same(Object.keys(result.body.errors), [name], name);
      t.match(result.body.errors[name], [
        /^Unknown query parameter: this list takes status, created_after, created_before, meter_id, plausibility, needs_review, limit, starting_after, format$/,
      ]);
    }
  });

  t.test('bad list parameters are 422 naming the parameter', async (t) => {
    const customer = await createCustomer(service.db);
    const cases: Array<[string, string, RegExp]> = [
      ['limit=0', 'limit', /^limit must be an integer from 1 to 100$/],
      ['limit=101', 'limit', /^limit must be an integer from 1 to 100$/],
      ['limit=ten', 'limit', /^limit must be an integer from 1 to 100$/],
      ['status=done', 'status', /^status must be one of pending, processing, completed, failed$/],
      ['created_after=yesterday', 'created_after', /^created_after must be an RFC 3339 date-time/],
      ['created_after=2026-02-30T00:00:00Z', 'created_after', /^created_after must be an RFC 3339 date-time/],
      [
        'created_after=2016-12-31T23:59:60Z',
        'created_after',
        /^created_after is a leap second \(:60\), which is not taken: use :59$/,
      ],
      ['created_after=0000-01-01T00:00:00Z', 'created_after', /^created_after has year 0000: years start at 0001$/],
      ['created_after=2026-01-01T00:00:00%2B01', 'created_after', /^created_after must be an RFC 3339 date-time/],
      ['created_before=2026-11-01', 'created_before', /^created_before must be an RFC 3339 date-time/],
      ['meter_id=flat%203', 'meter_id', /^meter_id must be 1–64 characters/],
      [
        'plausibility=maybe',
        'plausibility',
        /^plausibility must be one of ok, corrected, suspicious, implausible, unknown$/,
      ],
      ['needs_review=yes', 'needs_review', /^needs_review must be true or false$/],
      ['created_before=2026-02-30T00:00:00Z', 'created_before', /^created_before must be an RFC 3339 date-time/],
      ['starting_after=nope', 'starting_after', /^starting_after must be the next_cursor of the previous page/],
      [
        'starting_after=00000000-0000-4000-8000-000000000000',
        'starting_after',
        /^No submission of this account has this reference_id$/,
      ],
    ];
    for (const [query, field, message] of cases) {
      const result = await get(service, `/api/meter-readings?${query}`, customer.key);
      t.equal(result.status, 422, query);
      t.same(Object.keys(result.body.errors), [field], query);
      t.match(result.body.errors[field], [message], `${query}: one message that says what ${field} must be`);
    }
  });

  t.test('X-Request-Id: a sane client id is echoed, anything else replaced', async (t) => {
    const customer = await createCustomer(service.db);
    const echoed = await get(service, '/api/meter-readings', customer.key, { 'x-request-id': 'field-app:42.retry_1' });
    t.equal(echoed.headers.get('x-request-id'), 'field-app:42.retry_1');
    for (const insane of ['has space', 'x'.repeat(129), 'quote"']) {
      const replaced = await get(service, '/api/meter-readings', customer.key, { 'x-request-id': insane });
      t.match(replaced.headers.get('x-request-id'), UUID, insane);
    }
    t.match((await get(service, '/nowhere', undefined)).headers.get('x-request-id'), UUID, 'on a 404');
    t.match(
      (await get(service, '/api/meter-readings', undefined)).headers.get('x-request-id'),
      UUID,
      'on a refused key',
    );
    const upload = await submitPhoto(service, {
      key: customer.key,
      image: photo,
      headers: { 'x-request-id': 'upload-1' },
    });
    t.equal(upload.headers.get('x-request-id'), 'upload-1');
  });
});
