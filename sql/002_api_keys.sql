-- Keys are `meterlens_live_` + 32 hex chars, shown once; only their SHA-256 is stored.
-- display_prefix / display_suffix let a person recognise a key without revealing it.
CREATE TABLE api_keys (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id     bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  project_name   text NOT NULL,
  status         text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
  key_sha256     text NOT NULL UNIQUE CHECK (key_sha256 ~ '^[0-9a-f]{64}$'),
  display_prefix text NOT NULL,
  display_suffix text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  last_used_at   timestamptz,
  deleted_at     timestamptz
);

CREATE INDEX api_keys_account ON api_keys (account_id) WHERE deleted_at IS NULL;
