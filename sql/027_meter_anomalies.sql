-- Meters that need a visit (issue 45): a meter that stopped, ran backwards or leaks. One row per
-- episode: it opens when the meter's trusted readings start to show the condition (meter.anomaly
-- is sent in the same transaction) and closes when they no longer do. See src/meters/anomalies.ts.

-- meter_id: the submission whose trusted reading ends the span the episode was found over.
-- data: the meter.anomaly event's data as it was sent, less meter_id (kind, since, span, figures):
-- an open stop is judged against the reading in it, an open leak against the usual consumption.
CREATE TABLE meter_anomalies (
  id             bigserial PRIMARY KEY,
  meter_point_id bigint NOT NULL REFERENCES meter_points (id) ON DELETE CASCADE,
  kind           text NOT NULL CHECK (kind IN ('stopped', 'backwards', 'leak')),
  opened_at      timestamptz NOT NULL DEFAULT now(),
  closed_at      timestamptz,
  meter_id       bigint REFERENCES meters (id) ON DELETE SET NULL,
  data           jsonb NOT NULL
);

-- At most one open episode of each kind per meter: the event is sent once per episode.
CREATE UNIQUE INDEX meter_anomalies_open ON meter_anomalies (meter_point_id, kind) WHERE closed_at IS NULL;
