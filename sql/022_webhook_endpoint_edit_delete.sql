-- Deleting an endpoint keeps its deliveries and their attempts for the account's history, until
-- WEBHOOK_RETENTION_DAYS: endpoint_id becomes NULL and deleted_endpoint_url keeps where they went.
-- account_id says whose they are once the endpoint is gone.
ALTER TABLE webhook_deliveries
  ADD COLUMN account_id           bigint REFERENCES accounts (id) ON DELETE CASCADE,
  ADD COLUMN deleted_endpoint_url text;

UPDATE webhook_deliveries d SET account_id = e.account_id FROM webhook_endpoints e WHERE e.id = d.endpoint_id;

ALTER TABLE webhook_deliveries
  ALTER COLUMN account_id SET NOT NULL,
  ALTER COLUMN endpoint_id DROP NOT NULL;

CREATE INDEX webhook_deliveries_deleted_endpoint ON webhook_deliveries (account_id, created_at DESC) WHERE endpoint_id IS NULL;

-- The start of the receiver's answer, as the dashboard shows it with the attempt; NULL when no
-- answer came (the error says why).
ALTER TABLE webhook_attempts ADD COLUMN response_body_start text;
