-- Self sign-ups, counted per client address over a sliding window, so that one client cannot
-- create accounts (each with a free trial) without limit. Kept in Postgres, like login_attempts,
-- because every web process must share the count.
CREATE TABLE signup_attempts (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  ip           text NOT NULL,
  attempted_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX signup_attempts_ip ON signup_attempts (ip, attempted_at);
CREATE INDEX signup_attempts_attempted ON signup_attempts (attempted_at);
