-- Trusting a reading (issue 45). A reading is billed unseen only when it is consistent with what the
-- service knows of its meter; see needsReview in src/meters/review.ts.

-- review_below: a reading less confident than this needs a person's look before it is billed.
-- usual_m3_per_day: a meter's usual daily consumption while its own trusted history is too short to
-- estimate it (a household's by default).
ALTER TABLE accounts
  ADD COLUMN review_below     smallint NOT NULL DEFAULT 90 CHECK (review_below BETWEEN 0 AND 100),
  ADD COLUMN usual_m3_per_day numeric NOT NULL DEFAULT 1.5 CHECK (usual_m3_per_day > 0);

-- A manual reading is a submission without a photo: a reading a person took (or another system
-- holds), sent with POST /api/meters/{meter_id}/readings. Its created_at is when the meter showed it.
ALTER TABLE meters DROP CONSTRAINT meters_mode_check;
ALTER TABLE meters ADD CONSTRAINT meters_mode_check CHECK (mode IN ('async', 'sync', 'manual'));

-- suspicious: inside the physical window, but far above the meter's usual consumption since the
-- reference (usual_max). Like implausible, it is no reference until a person confirms it.
-- reference_meter_id: the submission whose reading was the reference (null: the client's
-- previous_reading of this submission), so that a person can see what to fix.
ALTER TABLE readings DROP CONSTRAINT readings_plausibility_check;
ALTER TABLE readings
  ADD CONSTRAINT readings_plausibility_check
    CHECK (plausibility IN ('ok', 'corrected', 'suspicious', 'implausible', 'unknown')),
  ADD COLUMN reference_meter_id bigint REFERENCES meters (id) ON DELETE SET NULL,
  ADD COLUMN usual_max          numeric;

-- manual: the reference was a manual reading.
ALTER TABLE readings DROP CONSTRAINT readings_reference_source_check;
ALTER TABLE readings ADD CONSTRAINT readings_reference_source_check
  CHECK (reference_source IN ('previous_reading', 'reading', 'correction', 'manual'));
