-- Idempotency-Key of POST /api/meter-reading and /api/meter-reading/sync: per account and key,
-- the first request's response, replayed to retries for 24 hours. status_code and response_body
-- are NULL while the first request is still running. Rows older than 24 hours are purged every
-- minute by the worker's expire-stale-meters job (and are ignored before that).
CREATE TABLE idempotency_keys (
  account_id       bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  idempotency_key  text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
  -- SHA-256 of the route and the upload: the same key with another request is refused.
  request_sha256   text NOT NULL,
  status_code      smallint,
  -- The response headers a replay repeats (Location, Retry-After).
  response_headers jsonb,
  response_body    text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, idempotency_key),
  CHECK ((status_code IS NULL) = (response_body IS NULL))
);

CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
