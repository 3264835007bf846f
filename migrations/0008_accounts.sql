-- Hosted mode's accounts (`auth/store.py`). An account is a GitHub identity and nothing more of
-- it: its numeric id and its login (kept up to date at each sign-in); `plan` is ours.
CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  github_id INTEGER NOT NULL UNIQUE,
  login TEXT NOT NULL,
  plan TEXT NOT NULL DEFAULT 'free',
  created_at TEXT NOT NULL
);

-- Sign-ins: the SHA-256 of the session id the cookie carries, never the id itself.
CREATE TABLE account_sessions (
  digest TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);

CREATE INDEX account_sessions_account ON account_sessions (account_id);

-- An account's API keys: the SHA-256 of the key (shown once, at creation), its name and a short
-- prefix the owner can recognise it by.
CREATE TABLE account_keys (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  name TEXT NOT NULL,
  digest TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  created_at TEXT NOT NULL
);

CREATE INDEX account_keys_account ON account_keys (account_id);
