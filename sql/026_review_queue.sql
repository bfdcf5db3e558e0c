-- The review queue (issue 46): the account's submissions that need review, oldest first, one at a
-- time. needs_review depends on the reading, its corrections and the account's threshold, which no
-- index can reach, so it is stored on the submission: refreshNeedsReview (src/meters/review.ts)
-- writes it, from those facts, in the transaction of every change to them. False until a
-- submission finishes.
ALTER TABLE meters ADD COLUMN needs_review boolean NOT NULL DEFAULT false;

-- The rule of needsReview as it stands today, for the submissions already there.
UPDATE meters m SET needs_review = true
FROM accounts a
WHERE a.id = m.account_id
  AND m.status IN ('completed', 'failed')
  AND m.mode <> 'manual'
  AND NOT EXISTS (SELECT 1 FROM reading_corrections WHERE meter_id = m.id)
  AND (
    m.status = 'failed'
    OR coalesce((SELECT plausibility FROM readings WHERE meter_id = m.id) IN ('implausible', 'suspicious'), false)
    OR coalesce((SELECT confidence FROM readings WHERE meter_id = m.id), 0) < a.review_below
  );

-- The queue's next item (oldest first after a cursor), its count in the dashboard's navigation, and
-- the lists' needs_review=true filter (newest first, the same index backwards): the index holds only
-- the submissions waiting, however many the account has.
CREATE INDEX meters_review_queue ON meters (account_id, created_at, id) WHERE needs_review;
