import { sql } from 'kysely';
import t from 'tap';
import { createApiKey } from '../../src/accounts/api-keys.ts';
import { CORRECTIONS_PER_SUBMISSION } from '../../src/meters/corrections.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import { seedReadings } from '../helpers/seed-readings.ts';
import { startTestService } from '../helpers/service.ts';

t.test('dashboard: meter page with its chart, and corrections from the reading page', async (t) => {
  const service = await startTestService(t, { worker: false });
  const photo = await renderMeterPhoto();
  const client = new DashboardClient(service.url);
  const email = `meters.${process.pid}@example.com`;
  t.equal((await client.signUp(email)).status, 303);
  const user = await service.db
    .selectFrom('users')
    .select('account_id')
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  const { key } = await createApiKey(service.db, { accountId: user.account_id, projectName: 'field app' });

  const submit = async (fields: Record<string, string>) => {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    form.append('image', new Blob([photo]), 'meter.jpg');
    const response = await fetch(`${service.url}/api/meter-reading/sync`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    return ((await response.json()) as { reference_id: string }).reference_id;
  };
  const first = await submit({
    meter_id: 'SN/42',
    previous_reading: '2380',
    previous_read_at: new Date(Date.now() - 7 * 86_400_000).toISOString(),
  });
  const second = await submit({ meter_id: 'SN/42' });

  const list = await client.get('/dashboard/readings');
  t.match(
    list.text,
    '<a href="/dashboard/meters/SN%2F42"><code>SN/42</code></a>',
    'the readings list links to the meter',
  );

  const meterPage = await client.get('/dashboard/meters/SN%2F42');
  t.equal(meterPage.status, 200);
  t.match(meterPage.text, /<svg viewBox="0 0 640 240" role="img"/, 'a server-rendered SVG chart');
  t.equal(meterPage.text.match(/<circle class="point"/g)?.length, 2);
  t.match(meterPage.text, /Consumption over the chart: <strong>0 m³<\/strong>/);
  t.notMatch(meterPage.text, /style=|<script>/, 'nothing the strict CSP would block');
  t.match(meterPage.text, first);
  t.ok(meterPage.text.indexOf(second) < meterPage.text.indexOf(first), 'newest first');

  const readingPage = await client.get(`/dashboard/readings/${second}`);
  t.match(readingPage.text, '<a href="/dashboard/meters/SN%2F42">', 'the reading page links to its meter');
  t.match(readingPage.text, /against 02390\.276 \(reading\)/);
  t.match(readingPage.text, /<h2>Correct this reading<\/h2>/);
  t.match(readingPage.text, /name="reading"[^>]*value="02390.276"/, 'the form starts from the reading');

  t.equal(
    (await client.post(`/dashboard/readings/${second}/correction`, { reading: '2390.3', _csrf: 'forged' })).status,
    403,
    'CSRF checked',
  );
  t.equal((await client.post(`/dashboard/readings/${second}/correction`, { reading: 'abc' })).status, 400);
  const saved = await client.post(`/dashboard/readings/${second}/correction`, { reading: '02391.500' });
  t.equal(saved.status, 303);
  t.equal(saved.location, `/dashboard/readings/${second}`);
  const corrected = await client.get(saved.location!);
  t.match(
    corrected.text,
    new RegExp(`Corrected to</dt><dd class="big"><strong>02391.500</strong> by ${email.replace(/\./g, '\\.')}`),
  );
  t.match(corrected.text, /<dt>Reading<\/dt><dd class="big"><strong>02390.276<\/strong>/, 'the machine reading stays');
  const correction = await service.db.selectFrom('reading_corrections').selectAll().executeTakeFirstOrThrow();
  t.match(correction, { reading: '02391.500', api_key_id: null, corrected_by: email });
  t.ok(correction.user_id, 'the user who corrected is stored');
  t.match(
    (await client.get('/dashboard/meters/SN%2F42')).text,
    /Consumption over the chart: <strong>1.224 m³<\/strong>/,
    'the chart uses the correction',
  );

  const stranger = new DashboardClient(service.url);
  await stranger.signUp(`stranger.${process.pid}@example.com`);
  t.equal((await stranger.get('/dashboard/meters/SN%2F42')).status, 404, "another account's meter");
  await stranger.get('/dashboard/usage');
  t.equal(
    (await stranger.post(`/dashboard/readings/${second}/correction`, { reading: '1' })).status,
    404,
    "another account's reading",
  );
  t.equal((await client.get('/dashboard/meters/bad%20id')).status, 404);

  for (let i = 1; i < CORRECTIONS_PER_SUBMISSION; i++)
    t.equal((await client.post(`/dashboard/readings/${second}/correction`, { reading: '02391.500' })).status, 303);
  const full = await client.post(`/dashboard/readings/${second}/correction`, { reading: '02391.600' });
  t.equal(full.status, 403, 'a submission at its bound of corrections');
  t.match(full.text, `This submission has ${CORRECTIONS_PER_SUBMISSION} corrections, the most one may have`);

  const wrongReference = {
    meter_id: 'SN-43',
    previous_reading: '02400.500',
    previous_read_at: new Date(Date.now() - 86_400_000).toISOString(),
  };
  const flagged = await submit(wrongReference);
  const flaggedPage = await client.get(`/dashboard/readings/${flagged}`);
  t.match(
    flaggedPage.text,
    /<dt>Billable<\/dt><dd><span class="badge badge-review">needs review<\/span>/,
    'an implausible reading needs review',
  );
  t.match(flaggedPage.text, /<h2>Confirm this reading<\/h2>/);
  t.equal(
    (await client.post(`/dashboard/readings/${flagged}/confirmation`, { _csrf: 'forged' })).status,
    403,
    'CSRF checked',
  );
  t.equal(
    (await stranger.post(`/dashboard/readings/${flagged}/confirmation`, {})).status,
    404,
    "another account's reading",
  );
  const confirmed = await client.post(`/dashboard/readings/${flagged}/confirmation`, {});
  t.equal(confirmed.status, 303);
  const confirmedPage = await client.get(`/dashboard/readings/${flagged}`);
  t.match(confirmedPage.text, /<dt>Billable<\/dt><dd>yes/);
  t.notMatch(confirmedPage.text, /Confirm this reading/);
  t.match(
    confirmedPage.text,
    new RegExp(`Corrected to</dt><dd class="big"><strong>02390.276</strong> by ${email.replace(/\./g, '\\.')}`),
    'stored as a correction equal to the reading',
  );
  const next = await submit({ meter_id: 'SN-43' });
  t.match(
    (await client.get(`/dashboard/readings/${next}`)).text,
    `(the reference is <a href="/dashboard/readings/${flagged}">this reading</a>`,
    'the confirmed reading is the reference, and the page links to it',
  );
  t.notMatch((await client.get(`/dashboard/readings/${next}`)).text, /whole units agreed/, "a hosted reader's reading");
  await sql`UPDATE readings SET whole_units_agreed = true
    WHERE submission_id = (SELECT id FROM submissions WHERE reference_id = ${next})`.execute(service.db);
  t.match(
    (await client.get(`/dashboard/readings/${next}`)).text,
    /<dt>Confidence<\/dt><dd>\d+, its whole units agreed: every reader read the same<\/dd>/,
    'the local reader says when its readers agree on the whole units',
  );
});

t.test(
  'dashboard: the readings list pages past 100 under its filters; the meters list; consumption per month',
  async (t) => {
    const service = await startTestService(t, { worker: false });
    const client = new DashboardClient(service.url);
    const email = `lists.${process.pid}@example.com`;
    t.equal((await client.signUp(email)).status, 303);
    const user = await service.db
      .selectFrom('users')
      .select('account_id')
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    const apiKey = await createApiKey(service.db, { accountId: user.account_id, projectName: 'field app' });
    const customer = { accountId: user.account_id, keyId: apiKey.id };
    const start = Date.UTC(2026, 5, 1);
    await seedReadings(
      service.db,
      customer,
      Array.from({ length: 260 }, (_, i) => ({
        meterId: i % 2 ? 'SN-7' : 'SN-8',
        createdAt: new Date(start + i * 3_600_000),
        reading: String(1000 + i).padStart(5, '0'),
        plausibility: i % 4 === 1 ? ('implausible' as const) : ('ok' as const),
      })),
    );

    const references = (page: string) =>
      [...page.matchAll(/<td data-label="Reference"><a href="\/dashboard\/readings\/([0-9a-f-]{36})">/g)].map(
        (match) => match[1],
      );
    const all = await client.get('/dashboard/readings');
    t.match(all.text, /<p class="hint" id="readings-total">260 submissions\.<\/p>/, 'the total');
    t.equal(references(all.text).length, 100);

    const first = await client.get('/dashboard/readings?meter_id=SN-7&status=completed');
    t.match(first.text, /id="readings-total">130 matching submissions\./, 'the total for the filter');
    t.match(first.text, /<input id="meter_id" name="meter_id" value="SN-7"/, 'the form shows the filter');
    t.match(
      first.text,
      /<td data-label="Plausibility"><span class="badge badge-implausible">implausible<\/span><\/td>/,
      'a plausibility column',
    );
    const older = /<a href="([^"]+)" rel="next">Older →<\/a>/.exec(first.text)?.[1]?.replaceAll('&amp;', '&');
    t.ok(older, 'a link to the older submissions');
    t.match(older, /meter_id=SN-7/, 'which keeps the filter');
    t.match(older, /status=completed/);
    const second = await client.get(older!);
    const seen = [...references(first.text), ...references(second.text)];
    t.equal(seen.length, 130, 'past the first 100');
    t.equal(new Set(seen).size, 130, 'none twice');
    const meterOf = await service.db
      .selectFrom('submissions as m')
      .innerJoin('meter_points as p', 'p.id', 'm.meter_point_id')
      .select(['m.reference_id', 'p.external_id'])
      .where('m.reference_id', 'in', seen)
      .execute();
    t.ok(
      meterOf.every((row) => row.external_id === 'SN-7'),
      'all of the filtered meter',
    );
    t.notMatch(second.text, /rel="next"/, 'the last page');
    t.match(second.text, /<a href="\/dashboard\/readings\?status=completed&amp;meter_id=SN-7">← Newest<\/a>/);

    const implausible = await client.get(
      '/dashboard/readings?meter_id=SN-7&plausibility=implausible&from=2026-06-02&to=2026-06-03',
    );
    t.match(
      implausible.text,
      /id="readings-total">12 matching submissions\./,
      'plausibility and a range of UTC days, both included',
    );

    const toReview = await client.get('/dashboard/readings?meter_id=SN-7&needs_review=true');
    t.match(toReview.text, /id="readings-total">65 matching submissions\./, 'needs_review: the implausible ones');
    t.match(toReview.text, /<option value="true" selected>yes<\/option>/, 'the form shows the filter');
    t.match(
      toReview.text,
      /<td data-label="Needs review"><span class="badge badge-review">needs review<\/span><\/td>/,
      'a needs-review column',
    );
    t.notMatch(toReview.text, /<td data-label="Needs review">no<\/td>/);
    const billable = await client.get('/dashboard/readings?meter_id=SN-7&needs_review=false');
    t.match(billable.text, /id="readings-total">65 matching submissions\./, 'and the rest');
    t.match(billable.text, /<td data-label="Needs review">no<\/td>/);
    const exportLink = /<a id="readings-export" href="([^"]+)" download>/
      .exec(toReview.text)?.[1]
      ?.replaceAll('&amp;', '&');
    t.equal(
      exportLink,
      '/dashboard/readings.csv?needs_review=true&meter_id=SN-7',
      'the billing export of the current filter',
    );
    const exported = await client.get(exportLink!);
    t.match(exported.headers.get('content-type'), /^text\/csv/);
    const lines = exported.text.trimEnd().split('\r\n');
    t.match(lines[0], /^reference_id,meter_id,created_at,/, 'its header row');
    t.equal(lines.length, 66, 'and the 65 matching submissions');
    t.ok(
      lines.slice(1).every((line) => /^[0-9a-f-]{36},SN-7,.*,true,false,machine,/.test(line)),
      'all of the meter, all needing review',
    );
    const meterPage = await client.get('/dashboard/meters/SN-7');
    t.match(
      meterPage.text,
      /<a id="meter-export" href="\/dashboard\/readings\.csv\?meter_id=SN-7" download>/,
      'the meter page offers its export',
    );

    await seedReadings(service.db, customer, [
      { meterId: 'SN-M', createdAt: new Date('2026-08-10T08:00:00Z'), reading: '00100.000', plausibility: 'ok' },
      { meterId: 'SN-M', createdAt: new Date('2026-08-25T08:00:00Z'), reading: '00110.000', plausibility: 'ok' },
      {
        meterId: 'SN-M',
        createdAt: new Date('2026-09-15T08:00:00Z'),
        reading: '00990.000',
        plausibility: 'implausible',
      },
      { meterId: 'SN-M', createdAt: new Date('2026-09-20T08:00:00Z'), reading: '00125.500', plausibility: 'ok' },
      { meterId: 'SN-M', createdAt: new Date('2026-11-03T08:00:00Z'), reading: '00150.000', plausibility: 'unknown' },
    ]);
    const meters = await client.get('/dashboard/meters');
    t.equal(meters.status, 200);
    t.match(meters.text, /<a href="\/dashboard\/meters" aria-current="page">Meters<\/a>/, 'in the navigation');
    t.same(
      [...meters.text.matchAll(/<td data-label="Meter"><a href="\/dashboard\/meters\/([^"]+)">/g)].map(
        (match) => match[1],
      ),
      ['SN-7', 'SN-8', 'SN-M'],
    );
    t.match(meters.text, /<a href="\/dashboard\/readings\/[0-9a-f-]{36}">00150.000<\/a>/, 'the last trusted reading');
    t.match(meters.text, /<a href="\/dashboard\/readings\/[0-9a-f-]{36}">01259<\/a>/, 'of each meter');
    const waiting = [
      ...meters.text.matchAll(
        /<td data-label="Meter"><a href="\/dashboard\/meters\/([^"]+)">.*?<td data-label="Waiting for review">(.*?)<\/td>/gs,
      ),
    ].map((match) => [match[1], match[2]]);
    t.same(
      waiting,
      [
        ['SN-7', '<a href="/dashboard/readings?needs_review=true&amp;meter_id=SN-7">65</a>'],
        ['SN-8', '—'],
        ['SN-M', '<a href="/dashboard/readings?needs_review=true&amp;meter_id=SN-M">1</a>'],
      ],
      "each meter's readings waiting for review, linked to the list of them",
    );
    const searched = await client.get('/dashboard/meters?prefix=SN-M');
    t.same(
      [...searched.text.matchAll(/<td data-label="Meter"><a href="\/dashboard\/meters\/([^"]+)">/g)].map(
        (match) => match[1],
      ),
      ['SN-M'],
    );

    const meter = await client.get('/dashboard/meters/SN-M');
    const months = [
      ...meter.text.matchAll(
        /<td data-label="Month">([^<]+)<\/td>\s*<td data-label="Last trusted reading">([^<]+)<\/td>\s*<td data-label="Consumption">([^<]+)<\/td>/g,
      ),
    ].map((match) => match.slice(1));
    t.same(months, [
      ['2026-11', '00150.000', '24.5 m³'],
      ['2026-09', '00125.500', '15.5 m³'],
      ['2026-08', '00110.000', '—'],
    ]);
    t.match(meter.text, /<figure class="consumption-chart">/);
    t.match(
      meter.text,
      /<p id="meter-review"><a href="\/dashboard\/readings\?needs_review=true&amp;meter_id=SN-M">1 submission waits for review<\/a>\.<\/p>/,
      'the meter page says what waits for review',
    );
    t.notMatch(
      (await client.get('/dashboard/meters/SN-8')).text,
      /id="meter-review"/,
      'and says nothing when nothing waits',
    );
  },
);

t.test("dashboard: a meter's counter layout, seen and set on its page by the rules of the API's layout", async (t) => {
  const service = await startTestService(t, { worker: false });
  const client = new DashboardClient(service.url);
  const email = `layout.${process.pid}@example.com`;
  t.equal((await client.signUp(email)).status, 303);
  const user = await service.db
    .selectFrom('users')
    .select('account_id')
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  const apiKey = await createApiKey(service.db, { accountId: user.account_id, projectName: 'field app' });
  await seedReadings(service.db, { accountId: user.account_id, keyId: apiKey.id }, [
    { meterId: 'SN/42', createdAt: new Date(Date.UTC(2026, 5, 1)), reading: '00100.500', plausibility: 'ok' },
    { meterId: 'SN-7', createdAt: new Date(Date.UTC(2026, 5, 1)), reading: '100.5', plausibility: 'ok' },
  ]);
  const unknownLayout = (await client.get('/dashboard/meters/SN-7')).text;
  t.match(
    unknownLayout,
    /<p id="meter-layout">Not known yet: a reading written as the dial shows it/,
    'a reading without its zeros shows none',
  );
  t.match(unknownLayout, /name="whole_wheels"[^>]*value=""/);
  const page = '/dashboard/meters/SN%2F42';
  const layoutText = async () =>
    /<p id="meter-layout">([^<]*(?:<code>[^<]*<\/code>[^<]*)?)<\/p>/.exec((await client.get(page)).text)?.[1];
  const setting = () =>
    service.db
      .selectFrom('meter_points')
      .select(['whole_wheels', 'fractional_wheels'])
      .where('external_id', '=', 'SN/42')
      .executeTakeFirstOrThrow();

  t.equal(
    await layoutText(),
    '5 black whole-unit wheels and 3 red fractional wheels, as 00100.500 shows.',
    'the layout its reading shows',
  );
  const form = (await client.get(page)).text;
  t.match(form, /<form method="post" action="\/dashboard\/meters\/SN%2F42\/layout"/);
  t.match(
    form,
    /name="whole_wheels"[^>]*min="1" max="10"[^>]*value="5"/,
    'the form starts from the layout the service judges in',
  );
  t.match(form, /name="fractional_wheels"[^>]*min="0" max="6"[^>]*value="3"/);
  t.notMatch(form, /layout\/unset/, 'nothing set, nothing to unset');
  t.notMatch(form, /style=|<script>/, 'nothing the strict CSP would block');

  const saved = await client.post(`${page}/layout`, { whole_wheels: '6', fractional_wheels: '1' });
  t.equal(saved.status, 303);
  t.equal(saved.location, page);
  t.equal(await layoutText(), '6 black whole-unit wheels and 1 red fractional wheel, set for this meter.');
  t.same(
    await setting(),
    { whole_wheels: 6, fractional_wheels: 1 },
    'stored where PATCH /api/meters/{meter_id} stores it',
  );
  await client.post(`${page}/layout`, { whole_wheels: ' 5 ', fractional_wheels: '0' });
  t.equal(await layoutText(), '5 black whole-unit wheels and no red fractional wheels, set for this meter.');

  for (const [whole, fraction] of [
    ['0', '3'],
    ['11', '3'],
    ['5', '7'],
    ['5', '-1'],
    ['5.0', '3'],
    ['five', '3'],
    ['', '3'],
    ['5', ''],
    ['1e1', '3'],
  ]) {
    const refused = await client.post(`${page}/layout`, { whole_wheels: whole!, fractional_wheels: fraction! });
    t.equal(refused.status, 400, `${whole} and ${fraction}`);
    t.match(refused.text, 'A counter has 1–10 black whole-unit wheels and 0–6 red fractional wheels');
  }
  t.equal((await client.post(`${page}/layout`, { whole_wheels: '5' })).status, 400, 'a field left out');
  t.same(await setting(), { whole_wheels: 5, fractional_wheels: 0 }, 'no refused form changed it');
  t.equal(
    (await client.post(`${page}/layout`, { whole_wheels: '5', fractional_wheels: '3', _csrf: 'forged' })).status,
    403,
    'CSRF checked',
  );
  t.equal((await client.post(`${page}/layout/unset`, { _csrf: 'forged' })).status, 403);

  const unknown = await client.post('/dashboard/meters/SN-99/layout', { whole_wheels: '5', fractional_wheels: '3' });
  t.equal(unknown.status, 404, 'a meter the account has not got');
  t.equal(
    (await client.post('/dashboard/meters/bad%20id/layout', { whole_wheels: '5', fractional_wheels: '3' })).status,
    404,
  );
  t.equal((await client.post('/dashboard/meters/bad%20id/layout/unset', {})).status, 404);
  const stranger = new DashboardClient(service.url);
  await stranger.signUp(`layout-stranger.${process.pid}@example.com`);
  await stranger.get('/dashboard/usage');
  t.equal(
    (await stranger.post(`${page}/layout`, { whole_wheels: '4', fractional_wheels: '2' })).status,
    404,
    "another account's meter",
  );
  t.equal((await stranger.post(`${page}/layout/unset`, {})).status, 404);
  t.equal(
    (await service.db.selectFrom('meter_points').select('external_id').execute()).length,
    2,
    'the dashboard names no new meter',
  );

  t.match(
    (await client.get(page)).text,
    /action="\/dashboard\/meters\/SN%2F42\/layout\/unset"/,
    'a set layout can be unset',
  );
  t.equal((await client.post(`${page}/layout/unset`, {})).status, 303);
  t.same(await setting(), { whole_wheels: null, fractional_wheels: null });
  t.equal(
    await layoutText(),
    '5 black whole-unit wheels and 3 red fractional wheels, as 00100.500 shows.',
    'its reading shows it again',
  );
});
