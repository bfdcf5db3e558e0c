-- The local reader's say that a counter with fractional wheels was read with every reader of its window agreeing on
-- the whole units: what it is unsure of is then litres, and a reading less confident than the account's review
-- threshold need not wait for review (src/meters/review.ts). Readings stored before it, and every hosted reader's,
-- say no: their needs_review stays as it was.
ALTER TABLE readings ADD COLUMN whole_units_agreed boolean NOT NULL DEFAULT false;
