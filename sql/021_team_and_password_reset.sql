-- Who may manage an account's people: an owner invites and removes colleagues, a member may not.
-- Users from before roles (sign-up, `meterlens users create`) could do everything: they are owners.
ALTER TABLE users ADD COLUMN role text NOT NULL DEFAULT 'owner' CHECK (role IN ('owner', 'member'));
ALTER TABLE users ALTER COLUMN role DROP DEFAULT;

-- Colleagues an owner invited by email. The link holds a random token; only its SHA-256 is stored.
-- It works once (used_at: accepted, or withdrawn by an owner) and until expires_at. The rows of the
-- last day also count the invitations an account sent, which are limited.
CREATE TABLE invitations (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id   bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  email        text NOT NULL CHECK (email LIKE '%_@_%'),
  invited_by   bigint REFERENCES users (id) ON DELETE SET NULL,
  token_sha256 text NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  used_at      timestamptz
);

CREATE INDEX invitations_account ON invitations (account_id, created_at);

-- Links mailed (or printed by `meterlens users reset-link`) to set a new password. Like the
-- verification links: a random token stored as its SHA-256, usable once, until expires_at.
CREATE TABLE password_resets (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_sha256 text NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  used_at      timestamptz
);

CREATE INDEX password_resets_user ON password_resets (user_id);

-- "Forgot password" requests, counted per email as typed (lower-cased, whether or not a user has
-- it) and per client address over a sliding window, like login_attempts (src/accounts/attempt-limits.ts).
CREATE TABLE password_reset_requests (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email        text NOT NULL,
  ip           text NOT NULL,
  attempted_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX password_reset_requests_email ON password_reset_requests (email, attempted_at);
CREATE INDEX password_reset_requests_ip ON password_reset_requests (ip, attempted_at);
CREATE INDEX password_reset_requests_attempted ON password_reset_requests (attempted_at);
