-- The OAuth 2.1 authorization server's state (`auth/`): registered clients, and every grant it
-- hands out (authorization codes, access tokens, refresh tokens, consent-form CSRF tokens), each
-- under the SHA-256 of its secret, never the secret itself.
--
-- `family` ties a code to every token issued from it and from its refresh rotations, so a reused
-- code or refresh token revokes them all with one UPDATE. `used` and `revoked` change only through
-- conditional UPDATEs (`... WHERE used = 0`), whose row count says who won: a code or refresh
-- token is spent once even when two requests race, on SQLite and on D1 alike.
CREATE TABLE oauth_clients (
  client_id TEXT PRIMARY KEY,
  client TEXT NOT NULL,
  created_at REAL NOT NULL
);

CREATE TABLE oauth_grants (
  hash TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  family TEXT NOT NULL,
  grant_json TEXT NOT NULL,
  expires_at REAL NOT NULL,
  used INTEGER NOT NULL DEFAULT 0,
  revoked INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX oauth_grants_family ON oauth_grants (family);
CREATE INDEX oauth_grants_expiry ON oauth_grants (expires_at);
