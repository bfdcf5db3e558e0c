-- A meter's counter layout as a person set it (PATCH /api/meters/{meter_id}): its whole-unit and
-- fractional wheels, e.g. 5 and 3 for `00037.902`. Both NULL: not set, the layout is the one its
-- reference or trusted readings show (src/readers/layout.ts). Its unit is always m³: every window,
-- usual consumption and export counts in m³.
ALTER TABLE meter_points
  ADD COLUMN whole_wheels      smallint CHECK (whole_wheels BETWEEN 1 AND 10),
  ADD COLUMN fractional_wheels smallint CHECK (fractional_wheels BETWEEN 0 AND 6),
  ADD CONSTRAINT meter_points_layout_whole CHECK ((whole_wheels IS NULL) = (fractional_wheels IS NULL));
