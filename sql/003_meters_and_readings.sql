-- One meter row per accepted submission. status: pending -> processing -> completed | failed.
CREATE TABLE meters (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  reference_id  uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  account_id    bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  api_key_id    bigint NOT NULL REFERENCES api_keys (id),
  mode          text NOT NULL CHECK (mode IN ('async', 'sync')),
  status        text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'processing', 'completed', 'failed')),
  error_code    text,
  error_message text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  started_at    timestamptz,
  finished_at   timestamptz,
  CHECK ((status = 'failed') = (error_code IS NOT NULL))
);

CREATE INDEX meters_account_created ON meters (account_id, created_at DESC);
CREATE INDEX meters_unfinished ON meters (created_at) WHERE status IN ('pending', 'processing');

-- The normalised JPEG the readers see. Kept in Postgres: web and worker share no disk.
CREATE TABLE meter_images (
  meter_id        bigint PRIMARY KEY REFERENCES meters (id) ON DELETE CASCADE,
  original_format text NOT NULL,
  original_bytes  integer NOT NULL,
  width           integer NOT NULL,
  height          integer NOT NULL,
  jpeg            bytea NOT NULL
);

CREATE TABLE readings (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  meter_id          bigint NOT NULL UNIQUE REFERENCES meters (id) ON DELETE CASCADE,
  reading           text NOT NULL CHECK (reading ~ '^[0-9]+(\.[0-9]+)?$'),
  value             numeric NOT NULL,
  confidence        smallint NOT NULL CHECK (confidence BETWEEN 0 AND 100),
  reader            text NOT NULL,
  model             text NOT NULL,
  escalated         boolean NOT NULL,
  digit_confidences smallint[],
  counter_box       jsonb,
  -- Every reader tried, in order: [{reader, outcome, ms, confidence?, error?}]
  attempts          jsonb NOT NULL,
  read_ms           integer NOT NULL,
  raw_answer        jsonb,
  created_at        timestamptz NOT NULL DEFAULT now()
);
