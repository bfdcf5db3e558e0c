import t from 'tap';
import { sql } from 'kysely';
import {
  holdReviewThreshold,
  needsReview,
  needsReviewSql,
  reviewReasons,
  type ReviewFacts,
  setReviewSettings,
} from '../../src/meters/review.ts';
import type { Plausibility } from '../../src/readers/reader.ts';
import { PlausibilityStatus } from '../../src/schemas/meter-reading.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { createCustomer, startTestService, submitPhoto } from '../helpers/service.ts';

t.test(
  'needs_review: the SQL rule the list filters and stored submissions read agrees with needsReview on every case',
  async (t) => {
    const service = await startTestService(t, { worker: false });
    const plausibilities: Array<Plausibility | null> = [
      null,
      ...PlausibilityStatus.anyOf.map((member) => member.const),
    ];
    const cases: ReviewFacts[] = [];
    for (const status of ['completed', 'failed'] as const)
      for (const plausibility of plausibilities)
        for (const confidence of [null, 0, 79, 80, 81, 100])
          for (const wholeUnitsAgreed of [false, true])
            for (const byPerson of [false, true])
              cases.push({ status, plausibility, confidence, reviewBelow: 80, wholeUnitsAgreed, byPerson });
    for (const facts of cases) {
      const { rows } = await sql<{ needs: boolean }>`SELECT ${needsReviewSql({
        status: sql`${facts.status}::text`,
        plausibility: sql`${facts.plausibility}::text`,
        confidence: sql`${facts.confidence}::smallint`,
        reviewBelow: sql`${facts.reviewBelow}::smallint`,
        wholeUnitsAgreed: sql`${facts.wholeUnitsAgreed}::boolean`,
        byPerson: sql`${facts.byPerson}::boolean`,
      })} AS needs`.execute(service.db);
      t.equal(rows[0]!.needs, needsReview(facts), JSON.stringify(facts));
    }
  },
);

t.test('an unsure reading whose whole units are agreed is billed; other reasons still hold it', async (t) => {
  const facts: ReviewFacts = {
    status: 'completed',
    plausibility: 'ok',
    confidence: 45,
    reviewBelow: 80,
    wholeUnitsAgreed: true,
    byPerson: false,
  };
  t.same(reviewReasons(facts), []);
  t.same(reviewReasons({ ...facts, wholeUnitsAgreed: false }), [{ kind: 'unsure', confidence: 45, reviewBelow: 80 }]);
  t.same(reviewReasons({ ...facts, plausibility: 'suspicious' }), [{ kind: 'flagged', plausibility: 'suspicious' }]);
});

t.test(
  'needs_review as stored: every path that changes its facts stores it again, equal to the rule over the facts',
  async (t) => {
    const service = await startTestService(t, { worker: false });
    const customer = await createCustomer(service.db);
    const photo = await renderMeterPhoto();
    const submit = async (fields: Record<string, string> = {}, sync = true) =>
      (await submitPhoto(service, { key: customer.key, image: photo, sync, fields })).body.reference_id as string;
    const confident = await submit({ meter_id: 'R-1' });
    const corrected = await submit({ meter_id: 'R-1' });
    const confirmed = await submit({ meter_id: 'R-1' });
    service.model.setBehaviour({ answer: { reading: '', confidence: 0, unobstructed: false } });
    const failed = await submit({ meter_id: 'R-1' });
    service.model.setBehaviour({ answer: { reading: '00017.250', confidence: 50, unobstructed: true } });
    const unsure = await submit();
    service.model.setBehaviour({});
    const pending = await submit({}, false);
    const api = (path: string, body?: unknown) =>
      fetch(`${service.url}/api${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${customer.key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
    t.equal((await api(`/meter-reading/${corrected}/correction`, { reading: '02391.000' })).status, 200);
    t.equal((await api(`/meter-reading/${confirmed}/confirmation`)).status, 200);
    t.equal(
      (await api('/meters/R-1/readings', { reading: '02391.500', read_at: new Date().toISOString() })).status,
      201,
    );

    const stored = async () => {
      const { rows } = await sql<{ reference_id: string; stored: boolean; rule: boolean }>`
      SELECT m.reference_id, m.needs_review AS stored, (m.status IN ('completed', 'failed') AND ${needsReviewSql({
        status: sql`m.status`,
        plausibility: sql`r.plausibility`,
        confidence: sql`r.confidence`,
        reviewBelow: sql`a.review_below`,
        wholeUnitsAgreed: sql`r.whole_units_agreed`,
        byPerson: sql`(m.mode = 'manual' OR EXISTS (SELECT 1 FROM reading_corrections WHERE submission_id = m.id))`,
      })}) AS rule
      FROM submissions m JOIN accounts a ON a.id = m.account_id LEFT JOIN readings r ON r.submission_id = m.id
      WHERE m.account_id = ${customer.accountId}`.execute(service.db);
      for (const row of rows) t.equal(row.stored, row.rule, `${row.reference_id}: stored as the rule says`);
      return new Map(rows.map((row) => [row.reference_id, row.stored]));
    };
    const before = await stored();
    t.same(
      [confident, corrected, confirmed, failed, unsure, pending].map((reference) => before.get(reference)),
      [false, false, false, true, true, false],
      'a confident reading, a correction, a confirmation: billable; a failure and an unsure reading wait; a pending one not yet',
    );
    await setReviewSettings(service.db, customer.accountId, { reviewBelow: 98 });
    const after = await stored();
    t.equal(after.get(confident), true, 'a new threshold applies to the stored readings (confidence 97 < 98)');
    t.equal(after.get(confirmed), false, 'but not to what a person confirmed');
  },
);

t.test(
  'a new threshold waits for the submissions being stored, so that none keeps a flag judged by the old one',
  async (t) => {
    const service = await startTestService(t, { worker: false });
    const customer = await createCustomer(service.db);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held!: () => void;
    const holding = new Promise<void>((resolve) => (held = resolve));
    // A transaction storing a submission's needs_review, as recordReading and the corrections do.
    const storing = service.db.transaction().execute(async (tx) => {
      await holdReviewThreshold(tx, customer.accountId);
      held();
      await released;
    });
    await holding;
    let changed = false;
    const change = setReviewSettings(service.db, customer.accountId, { reviewBelow: 95 }).then(() => (changed = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    t.equal(changed, false, 'the change waits');
    release();
    await storing;
    await change;
    t.equal(changed, true, 'and goes ahead once the submission is stored');
    t.same(await setReviewSettings(service.db, customer.accountId, { usualM3PerDay: 2 }), {
      reviewBelow: 95,
      usualM3PerDay: 2,
      trainOnHosted: false,
    });
    t.same(await setReviewSettings(service.db, customer.accountId, { trainOnHosted: true }), {
      reviewBelow: 95,
      usualM3PerDay: 2,
      trainOnHosted: true,
    });
  },
);

t.test("a new account's meterlens train learns from people-labelled photos only", async (t) => {
  const service = await startTestService(t, { worker: false });
  const { accountId } = await createCustomer(service.db);
  const account = await service.db
    .selectFrom('accounts')
    .select('train_on_hosted')
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow();
  t.equal(account.train_on_hosted, false, 'until the account says otherwise');
});
