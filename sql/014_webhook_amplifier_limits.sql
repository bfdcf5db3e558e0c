-- An endpoint is disabled after a run of failed attempts: when the run began and how many
-- attempts it holds. Any 2xx ends the run (NULL, 0); re-enabling starts afresh.
ALTER TABLE webhook_endpoints
  ADD COLUMN failing_since        timestamptz,
  ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0;

-- Test events and redeliveries a person asked for, counted per endpoint over the last minute.
-- Rows older than the window are deleted as new ones are added.
CREATE TABLE webhook_manual_sends (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id bigint NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  sent_at     timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX webhook_manual_sends_endpoint ON webhook_manual_sends (endpoint_id, sent_at);
