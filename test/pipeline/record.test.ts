import t from 'tap';
import { loadConfig } from '../../src/config.ts';
import { createDatabase } from '../../src/db/database.ts';
import { submissionJson, submissionRecords } from '../../src/meters/records.ts';
import { freshReadingResult } from '../../src/pipeline/reading-result.ts';
import { recordReading } from '../../src/pipeline/record.ts';
import { createBoss } from '../../src/queue.ts';
import type { ChainReading } from '../../src/readers/chain.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { createCustomer } from '../helpers/service.ts';

const database = await createTestDatabase();
t.teardown(database.drop);
const db = createDatabase(database.url);
t.teardown(() => db.destroy());
const config = loadConfig({});
const boss = createBoss(database.url, config);
await boss.start();
t.teardown(() => boss.stop({ graceful: false }));
const deps = { db, boss, config };

const frame = { width: 800, height: 600 };
const made: ChainReading = {
  reading: '02390.276',
  value: 2390.276,
  confidence: 97,
  reader: 'local',
  model: 'local-test',
  escalated: false,
  attempts: [],
  readMs: 5,
  raw: { answer: '02390.276' },
  plausibility: 'unknown',
  wholeUnitsAgreed: false,
  digitConfidences: [99, 98, 97, 96, 95, 94, 93, 92],
  counterBox: [
    [10, 20],
    [110, 22],
    [111, 60],
    [11, 58],
  ],
  frame,
};
const context = { meterId: null, reviewBelow: 80 };

/** A sync submission being read, with its upright photo's size stored as the read step stores it. */
async function submissionBeingRead() {
  const customer = await createCustomer(db);
  const submission = await db
    .insertInto('submissions')
    .values({
      account_id: customer.accountId,
      api_key_id: customer.keyId,
      mode: 'sync',
      status: 'processing',
      error_code: null,
      error_message: null,
      started_at: new Date(),
      finished_at: null,
    })
    .returning(['id', 'reference_id'])
    .executeTakeFirstOrThrow();
  await db
    .insertInto('submission_photos')
    .values({
      submission_id: submission.id,
      original_format: 'jpeg',
      original_bytes: 1,
      upload: null,
      width: frame.width,
      height: frame.height,
      jpeg: Buffer.from('jpeg'),
    })
    .execute();
  const ref = {
    submissionId: submission.id,
    accountId: customer.accountId,
    referenceId: submission.reference_id,
    mode: 'sync' as const,
  };
  return ref;
}

t.test('a reading just recorded is shown as GET shows it, byte for byte', async (t) => {
  const submission = await submissionBeingRead();
  const stored = await recordReading(deps, submission, made, context);
  t.ok(stored);
  const fresh = freshReadingResult(stored!, made, context);
  t.match(fresh, { counter_box: { corners: made.counterBox }, digits: Array });
  const record = await submissionRecords(db, submission.accountId)
    .where('m.id', '=', submission.submissionId)
    .executeTakeFirstOrThrow();
  const { reference_id, status, created_at, finished_at, correction, ...shown } = submissionJson(record) as Record<
    string,
    unknown
  >;
  t.equal(JSON.stringify(fresh), JSON.stringify(shown));
});

t.test(
  "an unsure reading whose whole units the window's readers agree on needs no review; without them it does",
  async (t) => {
    const unsure = { ...made, confidence: 45 };
    for (const wholeUnitsAgreed of [true, false]) {
      const submission = await submissionBeingRead();
      const stored = await recordReading(deps, submission, { ...unsure, wholeUnitsAgreed }, context);
      t.match(freshReadingResult(stored!, { ...unsure, wholeUnitsAgreed }, context), {
        whole_units_agreed: wholeUnitsAgreed,
        needs_review: !wholeUnitsAgreed,
      });
      const record = await submissionRecords(db, submission.accountId)
        .where('m.id', '=', submission.submissionId)
        .executeTakeFirstOrThrow();
      t.match(submissionJson(record), { whole_units_agreed: wholeUnitsAgreed, needs_review: !wholeUnitsAgreed });
    }
  },
);

t.test('a submission that has already finished records nothing', async (t) => {
  const submission = await submissionBeingRead();
  t.ok(await recordReading(deps, submission, made, context));
  t.equal(await recordReading(deps, submission, made, context), undefined);
});
