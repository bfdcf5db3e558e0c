-- Accepted submissions per account and calendar month (UTC); month is the month's first day.
CREATE TABLE api_usage (
  account_id    bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  month         date NOT NULL CHECK (extract(day FROM month) = 1),
  request_count integer NOT NULL DEFAULT 0 CHECK (request_count >= 0),
  PRIMARY KEY (account_id, month)
);
