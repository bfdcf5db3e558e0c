-- Account events: each usage milestone is announced at most once per account and month. The
-- row is locked by the upsert that counts the request, so whichever submission first reaches
-- a milestone sets its column and announces it.
ALTER TABLE api_usage
  ADD COLUMN threshold_reached_at timestamptz,
  ADD COLUMN limit_reached_at     timestamptz;

-- subscription.expired is announced once per period: the period_end it was announced for.
-- Periods that ended before these events existed are not announced now.
ALTER TABLE subscriptions ADD COLUMN expiry_announced_for timestamptz;
UPDATE subscriptions SET expiry_announced_for = period_end WHERE period_end <= now();

-- Bounded storage: photos older than IMAGE_RETENTION_DAYS are deleted from meter_images; the
-- meter and its reading stay, and this says when the photo went.
ALTER TABLE meters ADD COLUMN image_removed_at timestamptz;

-- Finished webhook deliveries (and their attempts, by cascade) are purged by age.
CREATE INDEX webhook_deliveries_finished_created ON webhook_deliveries (created_at) WHERE status <> 'pending';
