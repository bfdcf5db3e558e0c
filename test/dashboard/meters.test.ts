import t from 'tap';
import { createApiKey } from '../../src/accounts/api-keys.ts';
import { CORRECTIONS_PER_SUBMISSION } from '../../src/meters/corrections.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import { startTestService } from '../helpers/service.ts';

t.test('dashboard: meter page with its chart, and corrections from the reading page', async (t) => {
  const service = await startTestService(t, { worker: false });
  const photo = await renderMeterPhoto();
  const client = new DashboardClient(service.url);
  const email = `meters.${process.pid}@example.com`;
  t.equal((await client.signUp(email)).status, 303);
  const user = await service.db.selectFrom('users').select('account_id').where('email', '=', email).executeTakeFirstOrThrow();
  const { key } = await createApiKey(service.db, { accountId: user.account_id, projectName: 'field app' });

  const submit = async (fields: Record<string, string>) => {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    form.append('image', new Blob([photo]), 'meter.jpg');
    const response = await fetch(`${service.url}/api/meter-reading/sync`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    return ((await response.json()) as { reference_id: string }).reference_id;
  };
  const first = await submit({ meter_id: 'SN/42', previous_reading: '2380', previous_read_at: new Date(Date.now() - 7 * 86_400_000).toISOString() });
  const second = await submit({ meter_id: 'SN/42' });

  const list = await client.get('/dashboard/readings');
  t.match(list.text, '<a href="/dashboard/meters/SN%2F42"><code>SN/42</code></a>', 'the readings list links to the meter');

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

  t.equal((await client.post(`/dashboard/readings/${second}/correction`, { reading: '2390.3', _csrf: 'forged' })).status, 403, 'CSRF checked');
  t.equal((await client.post(`/dashboard/readings/${second}/correction`, { reading: 'abc' })).status, 400);
  const saved = await client.post(`/dashboard/readings/${second}/correction`, { reading: '02391.500' });
  t.equal(saved.status, 303);
  t.equal(saved.location, `/dashboard/readings/${second}`);
  const corrected = await client.get(saved.location!);
  t.match(corrected.text, new RegExp(`Corrected to</dt><dd class="big"><strong>02391.500</strong> by ${email.replace(/\./g, '\\.')}`));
  t.match(corrected.text, /<dt>Reading<\/dt><dd class="big"><strong>02390.276<\/strong>/, 'the machine reading stays');
  const correction = await service.db.selectFrom('reading_corrections').selectAll().executeTakeFirstOrThrow();
  t.match(correction, { reading: '02391.500', api_key_id: null, corrected_by: email });
  t.ok(correction.user_id, 'the user who corrected is stored');
  t.match((await client.get('/dashboard/meters/SN%2F42')).text, /Consumption over the chart: <strong>1.224 m³<\/strong>/, 'the chart uses the correction');

  const stranger = new DashboardClient(service.url);
  await stranger.signUp(`stranger.${process.pid}@example.com`);
  t.equal((await stranger.get('/dashboard/meters/SN%2F42')).status, 404, "another account's meter");
  await stranger.get('/dashboard/usage');
  t.equal((await stranger.post(`/dashboard/readings/${second}/correction`, { reading: '1' })).status, 404, "another account's reading");
  t.equal((await client.get('/dashboard/meters/bad%20id')).status, 404);

  for (let i = 1; i < CORRECTIONS_PER_SUBMISSION; i++)
    t.equal((await client.post(`/dashboard/readings/${second}/correction`, { reading: '02391.500' })).status, 303);
  const full = await client.post(`/dashboard/readings/${second}/correction`, { reading: '02391.600' });
  t.equal(full.status, 403, 'a submission at its bound of corrections');
  t.match(full.text, `This submission has ${CORRECTIONS_PER_SUBMISSION} corrections, the most one may have`);

  const wrongReference = { meter_id: 'SN-43', previous_reading: '02400.500', previous_read_at: new Date(Date.now() - 86_400_000).toISOString() };
  const flagged = await submit(wrongReference);
  const flaggedPage = await client.get(`/dashboard/readings/${flagged}`);
  t.match(flaggedPage.text, /<dt>Billable<\/dt><dd><span class="badge badge-review">needs review<\/span>/, 'an implausible reading needs review');
  t.match(flaggedPage.text, /<h2>Confirm this reading<\/h2>/);
  t.equal((await client.post(`/dashboard/readings/${flagged}/confirmation`, { _csrf: 'forged' })).status, 403, 'CSRF checked');
  t.equal((await stranger.post(`/dashboard/readings/${flagged}/confirmation`, {})).status, 404, "another account's reading");
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
});
