-- Plans are what an account can subscribe to; the monthly limit counts accepted submissions.
CREATE TABLE plans (
  code                  text PRIMARY KEY,
  name                  text NOT NULL,
  monthly_request_limit integer NOT NULL CHECK (monthly_request_limit >= 0),
  created_at            timestamptz NOT NULL DEFAULT now()
);

INSERT INTO plans (code, name, monthly_request_limit) VALUES
  ('trial',   'Trial',     100),
  ('starter', 'Starter',  1000),
  ('pro',     'Pro',     10000),
  ('scale',   'Scale',  100000);

CREATE TABLE accounts (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name       text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- One subscription per account, changed in place. It is active while status = 'active' and
-- now() < period_end; a past period_end is an expired subscription.
CREATE TABLE subscriptions (
  account_id   bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
  plan_code    text NOT NULL REFERENCES plans (code),
  status       text NOT NULL CHECK (status IN ('active', 'cancelled')),
  period_start timestamptz NOT NULL,
  period_end   timestamptz NOT NULL CHECK (period_end > period_start),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
