-- People who sign in to the dashboard. Each belongs to one account; an account may have several.
-- Emails are unique whatever their case; they are stored as typed and compared with lower().
CREATE TABLE users (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id    bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  email         text NOT NULL CHECK (email LIKE '%_@_%'),
  -- scrypt$<log2 N>$<r>$<p>$<salt base64>$<hash base64>
  password_hash text NOT NULL CHECK (password_hash LIKE 'scrypt$%'),
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_login_at timestamptz
);

CREATE UNIQUE INDEX users_email ON users (lower(email));
CREATE INDEX users_account ON users (account_id);

-- A signed-in browser. The cookie holds a random token; only its SHA-256 is stored, so a copy of
-- this table signs no one in. csrf_token is echoed in every form the session is shown.
CREATE TABLE sessions (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  token_sha256 text NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
  user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  csrf_token   text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX sessions_user ON sessions (user_id);

-- Failed sign-ins, counted per email and per client address over a sliding window. Kept in
-- Postgres because the web tier runs as several processes that must share one count.
CREATE TABLE login_attempts (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email        text NOT NULL,  -- lower-cased
  ip           text NOT NULL,
  attempted_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX login_attempts_email ON login_attempts (email, attempted_at);
CREATE INDEX login_attempts_ip ON login_attempts (ip, attempted_at);
CREATE INDEX login_attempts_attempted ON login_attempts (attempted_at);
