-- An Idempotency-Key's request is also its text fields: the same key with the same photo but
-- another meter_id, previous_reading or previous_read_at is another request (422 idempotency),
-- not a retry. fields_sha256 holds the SHA-256 of each of those fields as sent, or null for a
-- field that was not sent: {"meter_id": "<hex>" | null, "previous_reading": …, "previous_read_at": …}.
-- Keys claimed before this migration have none (NULL): their retries are compared by route and
-- upload (request_sha256), as they were when claimed. They are gone within 24 hours.
ALTER TABLE idempotency_keys ADD COLUMN fields_sha256 jsonb;
