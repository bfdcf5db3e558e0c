-- The meters list shows, for each meter of a page, how many of its submissions wait for review
-- (issue 46): a range of this index per meter, which holds only the submissions that wait, so the
-- count is read from the index alone however long the meter's history grows.
CREATE INDEX meters_meter_point_review ON meters (meter_point_id) WHERE needs_review;
