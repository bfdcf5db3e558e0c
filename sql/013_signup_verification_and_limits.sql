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

-- When the user followed a verification link sent to their email; null: never.
ALTER TABLE users ADD COLUMN email_verified_at timestamptz;

-- A self-signed-up account (with SMTP_URL set) gets this plan for a month once its user's email
-- is verified; null once it has started, and for every other account.
ALTER TABLE accounts ADD COLUMN trial_plan_code text REFERENCES plans (code);

-- Links mailed to verify a user's email. The link holds a random token; only its SHA-256 is
-- stored. A link works once (used_at) and until expires_at. The rows of the last hour also
-- count the mails sent to the user, which are limited.
CREATE TABLE email_verifications (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_sha256 text NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  used_at      timestamptz
);

CREATE INDEX email_verifications_user ON email_verifications (user_id, created_at);
