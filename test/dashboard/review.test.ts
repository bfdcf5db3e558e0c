import { sql } from 'kysely';
import t from 'tap';
import { createApiKey } from '../../src/accounts/api-keys.ts';
import { REVIEW_COUNT_LIMIT } from '../../src/meters/review.ts';
import { addWebhookEndpoint } from '../../src/webhooks/endpoints.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import { seedReadings } from '../helpers/seed-readings.ts';
import { startTestService, submitPhoto } from '../helpers/service.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

t.test('the review queue: oldest first, confirm, correct, skip, and a failed photo given a reading', async (t) => {
  const service = await startTestService(t, { worker: false });
  const photo = await renderMeterPhoto();
  const client = new DashboardClient(service.url);
  const email = `review.${process.pid}@example.com`;
  t.equal((await client.signUp(email)).status, 303);
  const user = await service.db
    .selectFrom('users')
    .select('account_id')
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  const apiKey = await createApiKey(service.db, { accountId: user.account_id, projectName: 'field app' });
  const customer = { accountId: user.account_id, keyId: apiKey.id, key: apiKey.key };
  await addWebhookEndpoint(service.db, service.config, {
    accountId: customer.accountId,
    url: 'http://127.0.0.1:9/hook',
    events: ['reading.corrected'],
  });

  // SN-1's trusted history, then three photos that need a look, oldest first: implausible, unreadable, unsure.
  await seedReadings(service.db, customer, [
    { meterId: 'SN-1', createdAt: new Date(Date.now() - 40 * DAY), reading: '02300.000', plausibility: 'unknown' },
    { meterId: 'SN-1', createdAt: new Date(Date.now() - 10 * DAY), reading: '02350.000', plausibility: 'ok' },
  ]);
  const submit = async (fields: Record<string, string>) =>
    (await submitPhoto(service, { key: customer.key, image: photo, sync: true, fields })).body;
  const implausible = await submit({
    meter_id: 'SN-1',
    previous_reading: '02380.000',
    previous_read_at: new Date(Date.now() - HOUR).toISOString(),
  });
  t.equal(implausible.plausibility.status, 'implausible');
  await sql`UPDATE readings SET counter_box = '[[200,80],[400,80],[400,120],[200,120]]' WHERE id = ${implausible.reading_id}`.execute(
    service.db,
  );
  service.model.setBehaviour({ answer: { reading: '', confidence: 0, unobstructed: false } });
  const unreadable = await submit({ meter_id: 'SN-1' });
  service.model.setBehaviour({ answer: { reading: '00017.250', confidence: 50, unobstructed: true } });
  const unsure = await submit({ meter_id: 'SN-2' });
  service.model.setBehaviour({});
  t.equal(unreadable.errors?.image?.length, 1, 'the unreadable photo failed');
  t.match(unsure, { confidence: 50, needs_review: true });
  const [a, b, c] = [implausible.reference_id, unreadable.reference_id, unsure.reference_id] as string[];

  const usage = await client.get('/dashboard/usage');
  t.match(
    usage.text,
    /<a href="\/dashboard\/review">Review <span class="count" id="review-count">3<span class="visually-hidden"> waiting<\/span><\/span><\/a>/,
    'the navigation counts what waits',
  );

  const first = await client.get('/dashboard/review');
  t.equal(first.status, 200);
  t.match(first.text, /id="review-waiting">3 waiting, oldest first/);
  t.match(first.text, `action="/dashboard/review/${a}/confirmation"`, 'the oldest first');
  t.match(
    first.text,
    /<svg class="zoom" viewBox="176 56 248 88" role="img"/,
    'zoomed on the counter box and a margin around it',
  );
  t.match(first.text, /<summary>Whole photo<\/summary>/, 'the whole photo a click away');
  t.match(first.text, /<strong id="review-machine-reading">02390\.276<\/strong>/, "the machine's reading");
  t.match(
    first.text,
    /<span class="badge badge-implausible">implausible<\/span>.*Reference 02380\.000 \(previous reading\)/s,
    'why it was flagged',
  );
  const beside = /<table class="responsive compact" id="review-beside">([\s\S]*?)<\/table>/.exec(first.text)?.[1] ?? '';
  t.match(
    beside,
    /02300\.000[\s\S]*02350\.000[\s\S]*<tr class="review-item">[\s\S]*02390\.276[\s\S]*\+40\.276/,
    'its trusted readings beside it, in time order, with the jump',
  );
  t.notMatch(first.text, /name="after"/, 'a pass from the oldest carries no cursor');
  t.notMatch(first.text, /style=|<script>/, 'nothing the strict CSP would block');

  const skip = /<a id="review-skip" href="([^"]+)">Skip<\/a>/.exec(first.text)?.[1]?.replaceAll('&amp;', '&');
  t.equal(skip, `/dashboard/review?after=${a}`, 'skipping moves the cursor past the item');
  const failed = await client.get(skip!);
  t.match(failed.text, `action="/dashboard/review/${b}/correction"`, 'the next one');
  t.notMatch(failed.text, /id="review-confirm"/, 'a failed photo has no reading to confirm');
  t.match(
    failed.text,
    /<span class="badge badge-failed">failed<\/span> The readers could not read this photo: <code>unreadable<\/code>/,
  );
  t.match(failed.text, /The photo was unreadable to the machine, not to you\./);
  t.match(failed.text, `<input type="hidden" name="after" value="${a}">`, 'the forms carry the cursor on');

  t.equal(
    (await client.post(`/dashboard/review/${b}/correction`, { reading: 'abc', after: a })).status,
    400,
    'a reading that is no reading',
  );
  t.equal(
    (await client.post(`/dashboard/review/${b}/correction`, { reading: '02391.000', after: a, _csrf: 'forged' }))
      .status,
    403,
    'CSRF checked',
  );
  t.equal(
    (await client.post(`/dashboard/review/${b}/confirmation`, { after: a })).status,
    400,
    'nothing to confirm on a failed photo',
  );
  const given = await client.post(`/dashboard/review/${b}/correction`, { reading: '02391.000', after: a });
  t.equal(given.status, 303);
  t.equal(given.location, `/dashboard/review?after=${a}`, 'straight to the next item of the pass');

  const third = await client.get(given.location!);
  t.match(third.text, `action="/dashboard/review/${c}/confirmation"`);
  t.match(
    third.text,
    /Confidence 50, below the account's review threshold of 80, and its readers do not all read the same whole units\./,
  );
  t.match(
    third.text,
    /The submission names no meter|<tr class="review-item">/,
    'SN-2 has no trusted reading yet: the item alone',
  );
  t.match(third.text, /id="review-count">2</, 'the count follows');
  const confirmed = await client.post(`/dashboard/review/${c}/confirmation`, { after: a });
  t.equal(confirmed.location, `/dashboard/review?after=${a}`);

  const end = await client.get(confirmed.location!);
  t.match(
    end.text,
    /End of this pass: 1 reading you skipped still waits\. <a href="\/dashboard\/review">Start again from the oldest<\/a>/,
    'the skipped one did not come back',
  );
  const again = await client.get('/dashboard/review');
  t.match(again.text, `action="/dashboard/review/${a}/confirmation"`, 'until the next pass');
  t.equal((await client.post(`/dashboard/review/${a}/confirmation`, {})).location, '/dashboard/review');
  const done = await client.get('/dashboard/review');
  t.match(done.text, /Nothing waits for review/);
  t.notMatch(done.text, /id="review-count"/, 'no count when nothing waits');

  const events = await service.db
    .selectFrom('webhook_deliveries')
    .select(['event_type', 'payload'])
    .where('account_id', '=', customer.accountId)
    .orderBy('id')
    .execute();
  t.same(
    events.map((event) => event.event_type),
    ['reading.corrected', 'reading.corrected', 'reading.corrected'],
    'each action announced to the endpoint that chose reading.corrected',
  );
  t.match(
    events.map((event) => (event.payload as { data: unknown }).data),
    [
      {
        reference_id: b,
        status: 'failed',
        error: { code: 'unreadable' },
        correction: { reading: '02391.000', corrected_by: email },
        needs_review: false,
      },
      {
        reference_id: c,
        reading: '00017.250',
        correction: { reading: '00017.250', corrected_by: email },
        needs_review: false,
      },
      { reference_id: a, reading: '02390.276', correction: { reading: '02390.276' }, needs_review: false },
    ],
  );

  t.equal((await client.get('/dashboard/review?after=not-a-position')).status, 400, 'a cursor the queue did not make');
  t.match(
    (await client.get(`/dashboard/review?after=${crypto.randomUUID()}`)).text,
    /Nothing waits for review/,
    'an unknown one ends the pass',
  );
  const stranger = new DashboardClient(service.url);
  await stranger.signUp(`review.stranger.${process.pid}@example.com`);
  await stranger.get('/dashboard/review');
  t.equal((await stranger.post(`/dashboard/review/${a}/confirmation`, {})).status, 404, "another account's submission");
  t.equal((await stranger.post(`/dashboard/review/${a}/correction`, { reading: '1' })).status, 404);
});

t.test("the navigation's count stops at REVIEW_COUNT_LIMIT, so that every page's cost stays bounded", async (t) => {
  const service = await startTestService(t, { worker: false });
  const client = new DashboardClient(service.url);
  const email = `review.many.${process.pid}@example.com`;
  await client.signUp(email);
  const user = await service.db
    .selectFrom('users')
    .select('account_id')
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  const apiKey = await createApiKey(service.db, { accountId: user.account_id, projectName: 'field app' });
  const flagged = (count: number) =>
    Array.from({ length: count }, (_, i) => ({
      meterId: 'SN-9',
      createdAt: new Date(Date.now() - (count - i) * 60_000),
      reading: '00001.000',
      plausibility: 'implausible' as const,
    }));
  await seedReadings(service.db, { accountId: user.account_id, keyId: apiKey.id }, flagged(REVIEW_COUNT_LIMIT - 1));
  t.match((await client.get('/dashboard/usage')).text, /id="review-count">999</);
  await seedReadings(service.db, { accountId: user.account_id, keyId: apiKey.id }, flagged(2));
  t.match((await client.get('/dashboard/usage')).text, /id="review-count">1,000\+</);
  t.match((await client.get('/dashboard/review')).text, /id="review-waiting">1,000\+ waiting/);
});
