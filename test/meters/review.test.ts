import t from 'tap';
import { sql } from 'kysely';
import { DEFAULT_MAX_FLOW } from '../../src/meters/meter-points.ts';
import { DEFAULT_REVIEW_BELOW, DEFAULT_USUAL_M3_PER_DAY, needsReview, needsReviewSql, type ReviewFacts } from '../../src/meters/review.ts';
import type { Plausibility } from '../../src/readers/reader.ts';
import { PlausibilityStatus } from '../../src/schemas/meter-reading.ts';
import { createCustomer, startTestService } from '../helpers/service.ts';

t.test('needs_review: the SQL rule the list filters and stored submissions read agrees with needsReview on every case', async (t) => {
  const service = await startTestService(t, { worker: false });
  const plausibilities: Array<Plausibility | null> = [null, ...PlausibilityStatus.anyOf.map((member) => member.const)];
  const cases: ReviewFacts[] = [];
  for (const status of ['completed', 'failed'] as const)
    for (const plausibility of plausibilities)
      for (const confidence of [null, 0, 79, 80, 81, 100])
        for (const byPerson of [false, true]) cases.push({ status, plausibility, confidence, reviewBelow: 80, byPerson });
  for (const facts of cases) {
    const { rows } = await sql<{ needs: boolean }>`SELECT ${needsReviewSql({
      status: sql`${facts.status}::text`,
      plausibility: sql`${facts.plausibility}::text`,
      confidence: sql`${facts.confidence}::smallint`,
      reviewBelow: sql`${facts.reviewBelow}::smallint`,
      byPerson: sql`${facts.byPerson}::boolean`,
    })} AS needs`.execute(service.db);
    t.equal(rows[0]!.needs, needsReview(facts), JSON.stringify(facts));
  }
});

t.test("a new account's review settings and max flow are the defaults `meterlens eval --previous` judges with", async (t) => {
  const service = await startTestService(t, { worker: false });
  const { accountId } = await createCustomer(service.db);
  const account = await service.db
    .selectFrom('accounts')
    .select(['review_below', 'usual_m3_per_day', 'max_flow_m3_per_hour'])
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow();
  t.same(
    { reviewBelow: account.review_below, usual: Number(account.usual_m3_per_day), maxFlow: Number(account.max_flow_m3_per_hour) },
    { reviewBelow: DEFAULT_REVIEW_BELOW, usual: DEFAULT_USUAL_M3_PER_DAY, maxFlow: DEFAULT_MAX_FLOW },
  );
});
