-- Physical meters, as the client names them (`meter_id` on a submission: a serial, an account
-- number). Not to be confused with `meters`, which holds one row per submitted photo.

-- The plausibility window's upper bound is reference + max flow × elapsed hours.
ALTER TABLE accounts
  ADD COLUMN max_flow_m3_per_hour numeric NOT NULL DEFAULT 2.5 CHECK (max_flow_m3_per_hour > 0);

CREATE TABLE meter_points (
  id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id           bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  external_id          text NOT NULL CHECK (external_id ~ '^[A-Za-z0-9._:/-]{1,64}$'),
  -- NULL: the account's max_flow_m3_per_hour.
  max_flow_m3_per_hour numeric CHECK (max_flow_m3_per_hour > 0),
  created_at           timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, external_id)
);

-- What the client said about the meter when it submitted the photo.
ALTER TABLE meters
  ADD COLUMN meter_point_id   bigint REFERENCES meter_points (id) ON DELETE SET NULL,
  ADD COLUMN previous_reading text CHECK (previous_reading ~ '^[0-9]+(\.[0-9]+)?$'),
  ADD COLUMN previous_read_at timestamptz;

CREATE INDEX meters_meter_point ON meters (meter_point_id, id DESC)
  WHERE meter_point_id IS NOT NULL;

-- The reading judged against the window [window_min, window_max] made from the reference.
-- plausibility: ok (inside), corrected (the constrained decode differs from the free one, kept in
-- unconstrained_reading), implausible (nothing probable inside; plausibility_reason says why),
-- unknown (no reference).
ALTER TABLE readings
  ADD COLUMN plausibility          text NOT NULL DEFAULT 'unknown'
                                   CHECK (plausibility IN ('ok', 'corrected', 'implausible', 'unknown')),
  ADD COLUMN reference_reading     text,
  ADD COLUMN reference_source      text CHECK (reference_source IN ('previous_reading', 'reading', 'correction')),
  ADD COLUMN reference_read_at     timestamptz,
  ADD COLUMN window_min            numeric,
  ADD COLUMN window_max            numeric,
  ADD COLUMN unconstrained_reading text,
  ADD COLUMN plausibility_reason   text;

-- A person's reading of a submitted photo, by API key or dashboard user. The newest one counts;
-- the machine's reading stays in `readings`. One equal to the machine's reading confirms it.
CREATE TABLE reading_corrections (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  meter_id          bigint NOT NULL REFERENCES meters (id) ON DELETE CASCADE,
  reading           text NOT NULL CHECK (reading ~ '^[0-9]+(\.[0-9]+)?$'),
  value             numeric NOT NULL,
  api_key_id        bigint REFERENCES api_keys (id),
  user_id           bigint REFERENCES users (id) ON DELETE SET NULL,
  corrected_by      text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX reading_corrections_meter ON reading_corrections (meter_id, id DESC);
CREATE INDEX reading_corrections_created ON reading_corrections (created_at);
