/**
 * The dashboard in a real browser (Debian's chromium driven by playwright-core), as a new client
 * uses it: sign up, create a key, use it, see the reading and the usage, add a webhook endpoint,
 * watch a test event arrive, then edit and delete the endpoint. Screenshots of every page go to test/screenshots/.
 * Code run in the page is given as strings: the project is typechecked without the DOM's types.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { chromium, type Browser, type Page } from 'playwright-core';
import t from 'tap';
import { createAccount } from '../../src/accounts/accounts.ts';
import { createApiKey } from '../../src/accounts/api-keys.ts';
import { createUser } from '../../src/accounts/users.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { startWebhookReceiver } from '../fakes/webhook-receiver.ts';
import { seedReadings } from '../helpers/seed-readings.ts';
import { startTestService, submitPhoto } from '../helpers/service.ts';
import { type ReceivedMail, startSmtpServer } from '../helpers/smtp.ts';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = path.join(import.meta.dirname, '..', 'screenshots');
const PHONE = { width: 390, height: 844 };

t.test(
  'the dashboard in chromium',
  {
    skip: existsSync(CHROMIUM)
      ? false
      : `${CHROMIUM} is missing: install Debian's chromium to run the browser tests (.ci/run does)`,
  },
  async (t) => {
    const service = await startTestService(t);
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    await mkdir(SCREENSHOTS, { recursive: true });
    const browser: Browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    t.teardown(() => browser.close());
    const context = await browser.newContext({ baseURL: service.url, viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.url });
    const page = await context.newPage();
    const problems = watchForProblems(page);
    const shot = (name: string, target: Page = page) =>
      target.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

    await page.goto('/');
    t.equal(new URL(page.url()).pathname, '/dashboard/login', '/ leads to sign-in');
    await page.keyboard.press('Tab');
    t.equal(
      await page.evaluate('document.activeElement?.textContent'),
      'Skip to content',
      'the first Tab reaches the skip link',
    );
    await shot('login');

    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByLabel('Organisation').fill('Acme Water');
    await page.getByLabel('Email').fill('ops@acme.example');
    await page.getByLabel('Password').fill('correct horse battery');
    await shot('signup');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL('**/dashboard/keys');

    await page.getByLabel('Project name').fill('field app');
    await page.getByLabel('Active', { exact: true }).check();
    await page.getByRole('button', { name: 'Create API Key' }).click();
    const key = (await page.locator('#secret-value').textContent()) ?? '';
    t.match(key, /^meterlens_live_[0-9a-f]{32}$/, 'the key is shown');
    await page.getByRole('button', { name: 'Copy' }).click();
    t.equal(await page.evaluate('navigator.clipboard.readText()'), key, 'Copy puts the key on the clipboard');
    await shot('keys-created');
    await page.getByRole('link', { name: 'API Keys' }).click();
    t.equal(await page.getByText(key).count(), 0, 'the key is not shown again');
    t.equal(await page.getByRole('cell', { name: 'field app' }).count(), 1, 'but it is listed');
    await shot('keys');

    const photo = await renderMeterPhoto();
    const reading = await submitPhoto(service, { key, image: photo, sync: true });
    t.equal(reading.status, 200, 'the key reads a meter');
    // The hosted fake gives no counter box; the local reader does. Draw one to see the overlay.
    await sql`UPDATE readings SET counter_box = '[[40,60],[530,60],[530,160],[40,160]]' WHERE id = ${reading.body.reading_id}`.execute(
      service.db,
    );

    await page.getByRole('link', { name: 'Readings' }).click();
    await page.getByRole('link', { name: reading.body.reference_id }).waitFor();
    t.equal(await page.getByRole('cell', { name: '02390.276' }).count(), 1, 'the reading is listed');
    await shot('readings');
    await page.getByRole('link', { name: reading.body.reference_id }).click();
    const image = page.getByRole('img', { name: 'The submitted meter photo, turned upright' });
    await image.waitFor();
    const loaded = page.waitForFunction("document.querySelector('.photo img').naturalWidth > 0", undefined, {
      timeout: 5000,
    });
    t.ok(
      await loaded.then(
        () => true,
        () => false,
      ),
      'the photo loads',
    );
    t.equal(await page.locator('polygon.counter-box').count(), 1, 'the counter box is drawn');
    await shot('reading');

    await page.getByRole('link', { name: 'Usage' }).click();
    t.match(await page.locator('main').textContent(), /1 of 100 requests/, 'usage counts the reading');
    await shot('usage');

    // A meter whose values need a wide value axis, and a list to filter by it.
    const owner = await service.db.selectFrom('api_keys').select(['id', 'account_id']).executeTakeFirstOrThrow();
    await seedReadings(service.db, { accountId: owner.account_id, keyId: owner.id }, [
      {
        meterId: 'SN-4711',
        createdAt: new Date(Date.now() - 20 * 86_400_000),
        reading: '12345678.125',
        plausibility: 'ok',
      },
      { meterId: 'SN-4711', createdAt: new Date(Date.now() - 86_400_000), reading: '12345699.500', plausibility: 'ok' },
    ]);
    await page.getByRole('link', { name: 'Readings' }).click();
    await page.getByLabel('Meter', { exact: true }).fill('SN-4711');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/meter_id=SN-4711/);
    t.match(
      await page.locator('#readings-total').textContent(),
      /^2 matching submissions/,
      'the readings filtered by meter',
    );
    await page.getByRole('link', { name: 'Meters', exact: true }).click();
    await page.getByRole('link', { name: 'SN-4711' }).click();
    const layout = await page.evaluate<{ clipped: number; overlap: number }>(`(() => {
      const svg = document.querySelector('.consumption-chart svg').getBoundingClientRect();
      const ticks = [...document.querySelectorAll('.consumption-chart .tick')].map((tick) => tick.getBoundingClientRect());
      const caption = document.querySelector('.consumption-chart figcaption').getBoundingClientRect();
      const next = document.querySelector('.consumption-chart').nextElementSibling.getBoundingClientRect();
      return { clipped: Math.max(...ticks.map((tick) => svg.left - tick.left)), overlap: caption.bottom - next.top };
    })()`);
    t.ok(layout.clipped <= 0, 'the value labels are inside the chart');
    t.ok(layout.overlap <= 0, 'the chart’s caption ends above what follows it');
    await shot('meter');

    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('Endpoint URL').fill(`${receiver.url}/meterlens`);
    await page.getByLabel('reading.failed').uncheck();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    t.match(await page.locator('#secret-value').textContent(), /^whsec_/, 'the signing secret is shown');
    await shot('webhook-added');
    await page.getByRole('button', { name: 'Send test event' }).click();
    await receiver.waitFor(1);
    t.equal(JSON.parse(receiver.received[0].body).event, 'webhook.test', 'the receiver got the test event');
    await reloadUntil(page, () =>
      page
        .locator('tr.delivery .badge-delivered')
        .count()
        .then((count) => count === 1),
    );
    t.equal(
      (await page.locator('tr.delivery td[data-label="Code"]').textContent())?.trim(),
      '204',
      'the delivery is listed with its status code',
    );
    await page.locator('tr.delivery summary').click();
    t.match(await page.locator('tr.delivery pre').textContent(), /"event": "webhook.test"/, 'with its payload');
    await shot('webhook');

    await page.getByLabel('Endpoint URL').fill(`${receiver.url}/edited`);
    await page.getByLabel('reading.failed').check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { level: 1, name: `${receiver.url}/edited` }).waitFor();
    t.match(await page.locator('dl.facts').textContent(), /reading\.completed, reading\.failed/, 'the edit is saved');
    await page.getByText('Attempts of this delivery').click();
    t.match(await page.locator('li.attempt').first().textContent(), /HTTP 204, \d+ ms/, 'each attempt is listed');
    await shot('webhook-edited');
    page.once('dialog', (dialog) => dialog.accept());
    await page.getByRole('button', { name: 'Delete endpoint' }).click();
    await page.waitForURL('**/dashboard/webhooks');
    t.equal(
      await page.getByRole('link', { name: `${receiver.url}/edited` }).count(),
      0,
      'the deleted endpoint is no longer listed',
    );
    t.equal(await page.locator('tr.deleted-endpoint-delivery').count(), 1, 'its delivery stays in the history');
    await shot('webhook-deleted');

    const phone = await browser.newContext({
      baseURL: service.url,
      viewport: PHONE,
      storageState: await context.storageState(),
    });
    const phonePage = await phone.newPage();
    for (const [name, url] of [
      ['keys', '/dashboard/keys'],
      ['readings', '/dashboard/readings'],
      ['usage', '/dashboard/usage'],
      ['meters', '/dashboard/meters'],
      ['meter', '/dashboard/meters/SN-4711'],
      ['webhooks', '/dashboard/webhooks'],
      ['team', '/dashboard/team'],
    ]) {
      await phonePage.goto(url);
      const overflow = await phonePage.evaluate<number>(
        'document.documentElement.scrollWidth - document.documentElement.clientWidth',
      );
      t.ok(overflow <= 0, `${name} fits a phone's width`);
      await shot(`${name}-phone`, phonePage);
    }
    await phone.close();

    page.once('dialog', (dialog) => dialog.accept());
    await page.getByRole('link', { name: 'API Keys' }).click();
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No API keys yet').waitFor();
    t.equal((await submitPhoto(service, { key, image: photo, sync: true })).status, 422, 'the deleted key is refused');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL('**/dashboard/login');
    t.same(problems, [], 'no console errors, failed requests or CSP violations');
  },
);

t.test(
  'a team in chromium: invite a colleague, and reset a password, through the mail the SMTP server got',
  {
    skip: existsSync(CHROMIUM)
      ? false
      : `${CHROMIUM} is missing: install Debian's chromium to run the browser tests (.ci/run does)`,
  },
  async (t) => {
    const smtp = await startSmtpServer();
    t.teardown(() => smtp.close());
    const service = await startTestService(t, {
      worker: false,
      env: { SMTP_URL: smtp.url, MAIL_FROM: 'noreply@meters.example.com' },
    });
    const account = await createAccount(service.db, { name: 'Acme Water', planCode: 'starter' });
    await createUser(service.db, {
      accountId: account.id,
      email: 'owner@acme.example',
      password: 'correct horse battery',
    });
    const browser: Browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    t.teardown(() => browser.close());
    const linkIn = (mail: ReceivedMail) => new URL(/(http\S+token=[\w-]+)/.exec(mail.text)![1]);

    const owner = await (await browser.newContext({ baseURL: service.url })).newPage();
    const problems = watchForProblems(owner);
    await owner.goto('/dashboard/login');
    await owner.getByLabel('Email').fill('owner@acme.example');
    await owner.getByLabel('Password').fill('correct horse battery');
    await owner.getByRole('button', { name: 'Sign in' }).click();
    await owner.getByRole('link', { name: 'Team' }).click();
    await owner.getByLabel('Email').fill('colleague@acme.example');
    await owner.getByRole('button', { name: 'Invite' }).click();
    const [invitation] = await smtp.waitFor(1);
    t.equal(
      await owner.locator('#secret-value').textContent(),
      linkIn(invitation).href,
      'the page shows the link it mailed',
    );
    await owner.screenshot({ path: path.join(SCREENSHOTS, 'team-invited.png'), fullPage: true });

    const colleague = await (await browser.newContext({ baseURL: service.url })).newPage();
    problems.push(...watchForProblems(colleague));
    await colleague.goto(linkIn(invitation).pathname + linkIn(invitation).search);
    await colleague.getByLabel('New password', { exact: true }).fill('a colleague passphrase');
    await colleague.getByLabel('New password again').fill('a colleague passphrase');
    await colleague.screenshot({ path: path.join(SCREENSHOTS, 'invitation.png'), fullPage: true });
    await colleague.getByRole('button', { name: 'Join' }).click();
    await colleague.getByRole('link', { name: 'Team' }).click();
    t.equal(
      await colleague.getByRole('cell', { name: 'colleague@acme.example (you)' }).count(),
      1,
      'the colleague is signed in, on the team',
    );

    await colleague.getByRole('button', { name: 'Sign out' }).click();
    await colleague.getByRole('link', { name: 'Forgot your password?' }).click();
    await colleague.getByLabel('Email').fill('colleague@acme.example');
    await colleague.getByRole('button', { name: 'Mail me a link' }).click();
    await colleague.getByText('we have mailed it a link').waitFor();
    const [, reset] = await smtp.waitFor(2);
    await colleague.goto(linkIn(reset).pathname + linkIn(reset).search);
    await colleague.getByLabel('New password', { exact: true }).fill('a fresh passphrase');
    await colleague.getByLabel('New password again').fill('a fresh passphrase');
    await colleague.getByRole('button', { name: 'Set new password' }).click();
    await colleague.waitForURL('**/dashboard/usage');
    await colleague.getByRole('button', { name: 'Sign out' }).click();
    await colleague.getByLabel('Email').fill('colleague@acme.example');
    await colleague.getByLabel('Password').fill('a fresh passphrase');
    await colleague.getByRole('button', { name: 'Sign in' }).click();
    await colleague.waitForURL('**/dashboard/usage');
    t.pass('the new password signs in');
    t.same(problems, [], 'no console errors, failed requests or CSP violations');
  },
);

t.test(
  'the back office in chromium: the review queue by keyboard, the readings list past 100 with a filter, the CSV export read back',
  {
    skip: existsSync(CHROMIUM)
      ? false
      : `${CHROMIUM} is missing: install Debian's chromium to run the browser tests (.ci/run does)`,
  },
  async (t) => {
    const service = await startTestService(t, { worker: false });
    const account = await createAccount(service.db, { name: 'Acme Water', planCode: 'starter' });
    await createUser(service.db, {
      accountId: account.id,
      email: 'billing@acme.example',
      password: 'correct horse battery',
    });
    const apiKey = await createApiKey(service.db, { accountId: account.id, projectName: 'field app' });
    const customer = { accountId: account.id, keyId: apiKey.id };
    await seedReadings(
      service.db,
      customer,
      Array.from({ length: 160 }, (_, i) => ({
        meterId: i % 16 === 0 ? 'SN-8' : 'SN-7',
        createdAt: new Date(Date.now() - (200 - i) * 3_600_000),
        reading: `0${2200 + i}.000`,
        plausibility: 'ok' as const,
      })),
    );
    // Three photos that need a person, oldest first: implausible (with a counter box), unreadable, unsure.
    const photo = await renderMeterPhoto();
    const submit = async (fields: Record<string, string>) =>
      (await submitPhoto(service, { key: apiKey.key, image: photo, sync: true, fields })).body;
    const implausible = await submit({
      meter_id: 'SN-7',
      previous_reading: '02380.000',
      previous_read_at: new Date(Date.now() - 3_600_000).toISOString(),
    });
    await sql`UPDATE readings SET counter_box = '[[40,60],[530,60],[530,160],[40,160]]' WHERE id = ${implausible.reading_id}`.execute(
      service.db,
    );
    service.model.setBehaviour({ answer: { reading: '', confidence: 0, unobstructed: false } });
    const unreadable = await submit({ meter_id: 'SN-7' });
    service.model.setBehaviour({ answer: { reading: '02390.500', confidence: 50, unobstructed: true } });
    const unsure = await submit({ meter_id: 'SN-7' });
    service.model.setBehaviour({});

    const browser: Browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    t.teardown(() => browser.close());
    const context = await browser.newContext({
      baseURL: service.url,
      viewport: { width: 1280, height: 900 },
      acceptDownloads: true,
    });
    const page = await context.newPage();
    const problems = watchForProblems(page);
    const shot = (name: string, target: Page = page) =>
      target.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
    await page.goto('/dashboard/login');
    await page.getByLabel('Email').fill('billing@acme.example');
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/dashboard/usage');

    t.equal(
      await page.locator('#review-count').textContent(),
      '3 waiting',
      'the navigation counts the readings waiting',
    );
    await page.getByRole('link', { name: /^Review/ }).click();
    await page.locator('#review-machine-reading').waitFor();
    t.equal(
      await page.locator('#review-machine-reading').textContent(),
      '02390.276',
      'the oldest first: the implausible reading',
    );
    t.match(await page.locator('#review-reasons').textContent(), /implausible/, 'and why it was flagged');
    t.match(
      await page.locator('#review-beside').textContent(),
      /02359\.000/,
      "the meter's last trusted readings beside it",
    );
    t.equal(
      await page.getByRole('img', { name: "The meter's counter, zoomed" }).count(),
      1,
      'the photo zoomed on the counter box',
    );
    await page.getByText('Whole photo').click();
    const whole = page.waitForFunction("document.querySelector('.whole-photo img').naturalWidth > 0", undefined, {
      timeout: 5000,
    });
    t.ok(
      await whole.then(
        () => true,
        () => false,
      ),
      'the whole photo a click away',
    );
    await shot('review');
    const phone = await browser.newContext({
      baseURL: service.url,
      viewport: PHONE,
      storageState: await context.storageState(),
    });
    const phonePage = await phone.newPage();
    await phonePage.goto('/dashboard/review');
    t.ok(
      (await phonePage.evaluate<number>(
        'document.documentElement.scrollWidth - document.documentElement.clientWidth',
      )) <= 0,
      "review fits a phone's width",
    );
    await shot('review-phone', phonePage);
    await phone.close();

    await page.keyboard.press('s');
    await page.waitForURL(`**/dashboard/review?after=${implausible.reference_id}`);
    await page.getByText('The photo was unreadable to the machine, not to you.').waitFor();
    t.match(
      await page.locator('#review-reasons').textContent(),
      /unreadable/,
      'S skipped to the next: the failed photo',
    );
    t.equal(await page.locator('#review-confirm').count(), 0, 'which has nothing to confirm');
    await shot('review-failed');
    await page.keyboard.type('02390.400');
    await page.keyboard.press('Enter');
    await page.locator('#review-machine-reading', { hasText: '02390.500' }).waitFor();
    t.pass('digits and Enter gave it a reading, and the next came: the unsure one');
    t.equal(await page.locator('#review-count').textContent(), '2 waiting');
    await page.keyboard.press('c');
    await page.locator('#review-end').waitFor();
    t.match(
      await page.locator('#review-end').textContent(),
      /End of this pass: 1 reading you skipped still waits/,
      'C confirmed it; the skipped one did not come back',
    );
    await page.getByRole('link', { name: 'Start again from the oldest' }).click();
    await page.locator('#review-machine-reading', { hasText: '02390.276' }).waitFor();
    await page.keyboard.type('02390.280');
    await page.keyboard.press('Enter');
    await page.getByText('Nothing waits for review').waitFor();
    t.equal(await page.locator('#review-count').count(), 0, 'the queue is empty');
    const people = await service.db
      .selectFrom('reading_corrections as c')
      .innerJoin('submissions as m', 'm.id', 'c.submission_id')
      .select(['m.reference_id', 'c.reading', 'c.corrected_by'])
      .orderBy('c.id')
      .execute();
    t.same(
      people,
      [
        { reference_id: unreadable.reference_id, reading: '02390.400', corrected_by: 'billing@acme.example' },
        { reference_id: unsure.reference_id, reading: '02390.500', corrected_by: 'billing@acme.example' },
        { reference_id: implausible.reference_id, reading: '02390.280', corrected_by: 'billing@acme.example' },
      ],
      'each action stored once: a reading given, a confirmation, a correction',
    );

    await page.getByRole('link', { name: 'Readings' }).click();
    await page.getByLabel('Meter', { exact: true }).fill('SN-7');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/meter_id=SN-7/);
    t.match(await page.locator('#readings-total').textContent(), /^153 matching submissions/, 'the filter’s total');
    const listed = async () => page.locator('td[data-label="Reference"]').allTextContents();
    const firstPage = await listed();
    t.equal(firstPage.length, 100);
    await page.getByRole('link', { name: 'Older →' }).click();
    await page.waitForURL(/after=/);
    const secondPage = await listed();
    t.equal(secondPage.length, 53, 'the rest, past the first 100');
    t.equal(new Set([...firstPage, ...secondPage]).size, 153, 'none twice');
    t.equal(await page.getByLabel('Meter', { exact: true }).inputValue(), 'SN-7', 'the filter kept on the next page');
    t.equal(await page.locator('td[data-label="Meter"]', { hasNotText: 'SN-7' }).count(), 0, 'all of the meter');
    await shot('readings-page-2');

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download as CSV' }).click(),
    ]);
    const csv = await readFile(await download.path(), 'utf8');
    const [header, ...rows] = csv.trimEnd().split('\r\n');
    t.match(
      header,
      /^reference_id,meter_id,created_at,finished_at,status,reading,value,unit,confidence,plausibility,needs_review,whole_units_agreed,quality,consumption,/,
    );
    t.equal(rows.length, 153, 'the CSV has every row of the filter, not a page');
    const column = (name: string) => header!.split(',').indexOf(name);
    const row = (reference: string) => rows.find((line) => line.startsWith(reference))!.split(',');
    t.same(new Set(rows.map((line) => line.split(',')[column('meter_id')])), new Set(['SN-7']));
    t.equal(row(unreadable.reference_id)[column('quality')], 'corrected', 'the failed photo, given a reading');
    t.equal(row(unreadable.reference_id)[column('corrected_reading')], '02390.400');
    t.equal(row(unsure.reference_id)[column('quality')], 'confirmed');
    t.equal(row(implausible.reference_id)[column('needs_review')], 'false', 'reviewed: billable');
    t.same(problems, [], 'no console errors, failed requests or CSP violations');
  },
);

/** Console errors and failed requests: a broken asset or a CSP violation shows up here. */
function watchForProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
  });
  return problems;
}

async function reloadUntil(page: Page, done: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done()) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    await page.reload();
  }
}
