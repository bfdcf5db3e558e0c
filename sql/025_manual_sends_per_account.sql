-- Test events and redeliveries are also counted per account, and outlive the endpoint they went to:
-- deleting an endpoint and adding it again must not start a fresh window.
ALTER TABLE webhook_manual_sends ADD COLUMN account_id bigint REFERENCES accounts (id) ON DELETE CASCADE;
UPDATE webhook_manual_sends s SET account_id = e.account_id FROM webhook_endpoints e WHERE e.id = s.endpoint_id;
ALTER TABLE webhook_manual_sends ALTER COLUMN account_id SET NOT NULL;

ALTER TABLE webhook_manual_sends ALTER COLUMN endpoint_id DROP NOT NULL;
ALTER TABLE webhook_manual_sends DROP CONSTRAINT webhook_manual_sends_endpoint_id_fkey;
ALTER TABLE webhook_manual_sends
  ADD CONSTRAINT webhook_manual_sends_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints (id) ON DELETE SET NULL;

CREATE INDEX webhook_manual_sends_account ON webhook_manual_sends (account_id, sent_at);
