CREATE TABLE webhook_endpoints (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id      bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  url             text NOT NULL,
  secret          text NOT NULL CHECK (secret LIKE 'whsec\_%'),
  events          text[] NOT NULL DEFAULT '{reading.completed,reading.failed}',
  enabled         boolean NOT NULL DEFAULT true,
  disabled_reason text,
  created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id);

-- One row per event and endpoint. event_id is the `webhook-id` header, stable across retries.
-- status: pending (an attempt is scheduled) -> delivered | failed (gave up or endpoint disabled).
CREATE TABLE webhook_deliveries (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id         text NOT NULL,
  endpoint_id      bigint NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  meter_id         bigint REFERENCES meters (id) ON DELETE SET NULL,
  event_type       text NOT NULL,
  -- json, not jsonb: the exact bytes that are signed and sent, identical on every attempt.
  payload          json NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempt_count    integer NOT NULL DEFAULT 0,
  last_status_code integer,
  last_error       text,
  next_attempt_at  timestamptz,
  delivered_at     timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (event_id, endpoint_id)
);

CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at DESC);

CREATE TABLE webhook_attempts (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id bigint NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt     integer NOT NULL,
  started_at  timestamptz NOT NULL,
  duration_ms integer NOT NULL,
  status_code integer,
  error       text,
  UNIQUE (delivery_id, attempt)
);
