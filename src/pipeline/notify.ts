import type { PgBoss } from 'pg-boss';
import type { Tx } from '../db/database.ts';
import type { ChainReading } from '../readers/chain.ts';
import { queueAccountEvent } from '../webhooks/deliver.ts';
import type { WebhookEvent } from '../webhooks/events.ts';
import type { ReadContext } from './expect-reading.ts';
import { freshReadingResult, type StoredReading } from './reading-result.ts';

export type SubmissionOutcome =
  | {
      status: 'completed';
      submissionId: string;
      accountId: string;
      referenceId: string;
      reading: ChainReading;
      stored: StoredReading;
      context: ReadContext;
    }
  | {
      status: 'failed';
      submissionId: string;
      accountId: string;
      referenceId: string;
      error: { code: string; message: string };
    };

/**
 * Step 8, for async submissions: inside the transaction that records the outcome, one webhook
 * delivery per enabled endpoint of the account subscribed to the event, each enqueued to be
 * attempted at once. Rolled back with the outcome, so no webhook announces an unrecorded result.
 */
export async function notify(tx: Tx, boss: PgBoss, outcome: SubmissionOutcome): Promise<void> {
  const type: WebhookEvent = outcome.status === 'completed' ? 'reading.completed' : 'reading.failed';
  await queueAccountEvent(tx, boss, {
    accountId: outcome.accountId,
    type,
    data: eventData(outcome),
    submissionId: outcome.submissionId,
  });
}

function eventData(outcome: SubmissionOutcome): Record<string, unknown> {
  if (outcome.status === 'failed')
    return { reference_id: outcome.referenceId, error: outcome.error, needs_review: true };
  return {
    reference_id: outcome.referenceId,
    ...freshReadingResult(outcome.stored, outcome.reading, outcome.context),
  };
}
