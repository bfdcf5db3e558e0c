-- A meter's submissions in the order the meter showed them: a manual reading's created_at is when it
-- was read, which may be long before rows added after it. Its history, its last trusted reading
-- and the next photo's reference all walk this order.
DROP INDEX meters_meter_point;
CREATE INDEX meters_meter_point ON meters (meter_point_id, created_at DESC, id DESC);
